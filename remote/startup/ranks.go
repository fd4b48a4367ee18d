package startup

import (
	"strconv"
	"strings"
)

// RankNum is one rank number in a line's rank tags: the 3 of "TP3", the 6
// of "rank=6", the 0 of vLLM's "EngineCore_0".
type RankNum struct {
	Dim        string // what it counts: "TP", "DP", "EP", "PP", "rank=", "" (a bare _N)
	Value      int
	Start, End int // the digits' byte span in the line
}

// RankTag says which process of a parallel engine printed a line, as the
// line's own prefixes name it: SGLang's logger prefix ("[2026-11-30
// 10:04:42 DP0 TP3] "), vLLM's process tag ("(Worker_TP0 pid=123) ",
// "(VllmWorkerProcess pid=4321) ", stacked ones such as "(EngineCore_DP0
// pid=6183) (RayWorkerWrapper pid=578) "), torch's "[rank3]:" and old
// SGLang's "[gpu_id=0] ".
type RankTag struct {
	// ID is the tags as printed, numbers and process ids included
	// ("DP0 TP3", "Worker_TP0 pid=123"): lines of one process share it,
	// lines of two processes do not.
	ID string
	// Nums are the rank numbers in the tags, in the order printed. Process
	// ids and addresses are not among them: they name a process, they do
	// not rank it.
	Nums []RankNum
}

// ParseRankTag finds the rank tags among the prefixes line starts with
// (walking them as splitLine does, so a compose column or a pasted
// journalctl prefix before them does not hide them). A line of the main
// process (SGLang's "[2026-11-30 10:04:42] ", vLLM's driver) carries none
// and is not ranked.
func ParseRankTag(line string) (RankTag, bool) {
	var t RankTag
	s, off := line, 0
	for range 8 {
		trimmed := strings.TrimLeft(s, " ")
		off += len(s) - len(trimmed)
		s = trimmed
		n, tag := prefixLen(s)
		if n == 0 {
			break
		}
		if tag != "" && (s[0] == '(' || s[0] == '[') {
			// A paren tag is vLLM's (it carries a pid); a bracket tag is
			// SGLang's ranks, torch's rank or gpu_id. Other tags (a
			// journalctl ident, a compose service) name no rank.
			at := off + strings.LastIndex(s[:n], tag)
			if t.ID != "" {
				t.ID += " "
			}
			t.ID += tag
			t.Nums = appendRankNums(t.Nums, line, at, at+len(tag), s[0] == '(')
		}
		s, off = s[n:], off+n
	}
	return t, t.ID != ""
}

// appendRankNums adds the rank numbers of the tag line[from:to]: every
// run of digits with the label before it ("TP" in "Worker_TP0", "rank="
// in "rank=6", "ATTN_CP" in SGLang's "ATTN_CP1 TP1"), but for a process
// id (pid=) and an address (ip=…). In vLLM's process names (named) an
// underscore separates the ranks; in SGLang's tags it is part of one.
func appendRankNums(nums []RankNum, line string, from, to int, named bool) []RankNum {
	tag := line[from:to]
	isSep := func(c byte) bool { return c == ' ' || c == ',' || named && c == '_' }
	for i := 0; i < len(tag); {
		if !isDigit(tag[i]) {
			i++
			continue
		}
		j := i
		for j < len(tag) && isDigit(tag[j]) {
			j++
		}
		k := i
		for k > 0 && (isUpper(tag[k-1]) || isLower(tag[k-1]) || tag[k-1] == '=' || tag[k-1] == '_' && !named) {
			k--
		}
		label := tag[k:i]
		inWord := k > 0 && !isSep(tag[k-1]) || j < len(tag) && (isUpper(tag[j]) || isLower(tag[j]))
		if inWord || label == "pid=" || label == "ip=" {
			// A process id, or digits inside a word that is not a rank
			// (Qwen2Worker): skip them; an address (ip=10.0.0.7) up to
			// the next separator.
			if label == "ip=" || k > 0 && tag[k-1] == '.' {
				for j < len(tag) && !isSep(tag[j]) {
					j++
				}
			}
			i = j
			continue
		}
		v, err := strconv.Atoi(tag[i:j])
		if err == nil {
			nums = append(nums, RankNum{Dim: label, Value: v, Start: from + i, End: from + j})
		}
		i = j
	}
	return nums
}

func isUpper(c byte) bool { return c >= 'A' && c <= 'Z' }
func isLower(c byte) bool { return c >= 'a' && c <= 'z' }

// Blanked ranked lines: two lines from different ranks say the same thing
// when they are equal once every number is blanked — rank numbers, process
// ids, timestamps, and the per-rank figures ranks differ in (free memory,
// a port, a local rank). Words, punctuation and the tags' shape must
// match exactly, so "Load weight begin" never goes with "Load weight end",
// and a vLLM worker's line never with an SGLang scheduler's.

// nextBlanked returns the byte at i of s as it reads blanked, and where
// the next one starts: a run of digits (or a 0x hex number) reads as one
// '#'.
func nextBlanked(s string, i int) (byte, int) {
	c := s[i]
	if !isDigit(c) {
		return c, i + 1
	}
	j := i + 1
	if c == '0' && j < len(s) && (s[j] == 'x' || s[j] == 'X') && j+1 < len(s) && isHex(s[j+1]) {
		j++
		for j < len(s) && isHex(s[j]) {
			j++
		}
		return '#', j
	}
	for j < len(s) && isDigit(s[j]) {
		j++
	}
	return '#', j
}

func isHex(c byte) bool { return isDigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

// BlankedHash is a hash (64-bit FNV-1a) of line with every number
// blanked: lines SameBlanked calls the same have the same hash.
func BlankedHash(line string) uint64 {
	const (
		offset = 14695981039346656037
		prime  = 1099511628211
	)
	h := uint64(offset)
	for i := 0; i < len(line); {
		var c byte
		c, i = nextBlanked(line, i)
		h ^= uint64(c)
		h *= prime
	}
	return h
}

// SameBlanked reports whether a and b are equal once every number in
// them is blanked. It allocates nothing.
func SameBlanked(a, b string) bool {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		var ca, cb byte
		ca, i = nextBlanked(a, i)
		cb, j = nextBlanked(b, j)
		if ca != cb {
			return false
		}
	}
	return i == len(a) && j == len(b)
}

// Body is line without the prefixes it starts with (a logger's time stamp
// and level, the rank and process tags, a compose column): the message
// itself, as the diagnosis reads it.
func Body(line string) string {
	_, b := splitLine(line)
	return b
}
