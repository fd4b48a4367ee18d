package startup

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// RulePack is the set of rules that recognise one engine's log lines. It is
// plain data (exported string fields with json and yaml tags) so that users
// can add packs from their config when a release changes its wording.
type RulePack struct {
	// Engine is "sglang", "vllm", or another name; "" makes a generic pack
	// that applies whatever the engine is.
	Engine string `json:"engine" yaml:"engine"`
	// Detect lists literal substrings that identify the engine in a log line.
	Detect []string `json:"detect,omitempty" yaml:"detect,omitempty"`
	// DetectPattern is an RE2 pattern that identifies the engine (e.g. its
	// line prefix); it runs only while the engine is unknown.
	DetectPattern string        `json:"detect_pattern,omitempty" yaml:"detect_pattern,omitempty"`
	Phases        []PhaseRule   `json:"phases,omitempty" yaml:"phases,omitempty"`
	Failures      []FailureRule `json:"failures,omitempty" yaml:"failures,omitempty"`
	// Frames map traceback frames to the phase the process died in.
	Frames []FrameRule `json:"frames,omitempty" yaml:"frames,omitempty"`
	// Metrics read the engine's periodic stats lines into serving samples.
	Metrics []MetricRule `json:"metrics,omitempty" yaml:"metrics,omitempty"`
	// First puts a user pack before the built-in ones, so that its rules
	// win where both match a line; by default the built-in packs win.
	First bool `json:"first,omitempty" yaml:"first,omitempty"`
}

// PhaseRule recognises a line that marks a phase or its progress.
type PhaseRule struct {
	// Keywords are literal, case-sensitive substrings; a line must contain
	// at least one before Pattern is tried. They keep the cost per line low:
	// most lines contain none and no regex runs at all.
	Keywords []string `json:"keywords" yaml:"keywords"`
	// Pattern is an RE2 pattern, not anchored, since lines carry prefixes.
	// Empty means a keyword alone is a match. Named groups "done" and
	// "total" give progress counts, "label" a progress label.
	Pattern string `json:"pattern,omitempty" yaml:"pattern,omitempty"`
	// Phase is the phase the line starts (or reports progress in); empty
	// means progress of whatever phase is current.
	Phase Phase `json:"phase,omitempty" yaml:"phase,omitempty"`
	// InPhases limits the rule to lines seen in these phases; empty means any.
	InPhases []Phase `json:"in_phases,omitempty" yaml:"in_phases,omitempty"`
	// Label is the progress label when the pattern has no "label" group.
	Label string `json:"label,omitempty" yaml:"label,omitempty"`
	// Ready marks the engine's own "ready" line.
	Ready bool `json:"ready,omitempty" yaml:"ready,omitempty"`
	// Ends names the phase the line closes ("Load weight end" closes
	// weights): the trail holds that phase even when its begin line was
	// not seen, as in an excerpt that starts there.
	Ends Phase `json:"ends,omitempty" yaml:"ends,omitempty"`
}

// FailureRule recognises a failure line.
type FailureRule struct {
	// Keywords and Pattern work as in PhaseRule.
	Keywords []string `json:"keywords" yaml:"keywords"`
	Pattern  string   `json:"pattern,omitempty" yaml:"pattern,omitempty"`
	// Cause is the stable id scripts match on, e.g. "gpu-oom".
	Cause   string `json:"cause" yaml:"cause"`
	Summary string `json:"summary" yaml:"summary"`
	Hint    string `json:"hint" yaml:"hint"`
	// Phase is the phase the failure belongs to whatever phase the startup
	// was in (a KV budget error is printed before the KV line); empty means
	// the phase current when the line arrived.
	Phase Phase `json:"phase,omitempty" yaml:"phase,omitempty"`
	// InPhases limits the rule to lines seen in these phases (CUDA OOM means
	// one thing during capture and another during weight loading).
	InPhases []Phase `json:"in_phases,omitempty" yaml:"in_phases,omitempty"`
	// Wrapper marks a secondary line that points at an earlier root cause
	// ("operation failed due to a previous error during capture"); it is
	// evidence, and the cause only when nothing more specific was seen.
	Wrapper bool `json:"wrapper,omitempty" yaml:"wrapper,omitempty"`
	// Unless lists literal substrings that make a matching line no
	// failure of this rule (NCCL's INFO chatter about an optional plugin
	// it could not load is no broken install).
	Unless []string `json:"unless,omitempty" yaml:"unless,omitempty"`
	// Latest is the furthest phase this failure can strike in: a port
	// that will not bind is found binding, before serving, though
	// uvicorn says "Application startup complete" first.
	Latest Phase `json:"latest,omitempty" yaml:"latest,omitempty"`
	// Usual is the phase this failure strikes in when neither the frames
	// nor the trail say (NCCL and rendezvous errors belong to init).
	Usual Phase `json:"usual,omitempty" yaml:"usual,omitempty"`
	// Native marks a native crash (a segmentation fault): the innermost
	// frame of its crash dump may name the cause (FrameRule.Cause).
	Native bool `json:"native,omitempty" yaml:"native,omitempty"`
	// Relay marks a line that only relays that a process failed somewhere
	// ("Scheduler hit an exception", "EngineCore failed to start"): it
	// names nothing, and loses to every other failure line.
	Relay bool `json:"relay,omitempty" yaml:"relay,omitempty"`
	// Hardware marks a GPU hardware fault (an uncorrectable ECC error, an
	// Xid, a GPU fallen off the bus): software fails because of it, so it
	// wins over every other failure line, whichever kernel it surfaced in.
	Hardware bool `json:"hardware,omitempty" yaml:"hardware,omitempty"`
	// Fatal marks a line the engine prints only when it gives up
	// ("Received sigquit from a child process", "Engine core
	// initialization failed"): the startup has failed even before systemd
	// reports the unit's end, and even if the unit lingers.
	Fatal bool `json:"fatal,omitempty" yaml:"fatal,omitempty"`
	// RaisedIn limits the rule to the exception line of a traceback whose
	// innermost frame is one of these functions: a KeyError raised in a
	// model's load_weights is a checkpoint that does not match the model,
	// the same KeyError elsewhere is not.
	RaisedIn []string `json:"raised_in,omitempty" yaml:"raised_in,omitempty"`
	// Outranks lists causes this failure wins over wherever their lines
	// are: a GPU the engine refuses outright makes the dtype it lacks
	// (model-unsupported) a consequence, whichever line came first.
	Outranks []string `json:"outranks,omitempty" yaml:"outranks,omitempty"`
}

// minKeyword is the shortest keyword a rule may have: the index hashes
// three bytes, and shorter keywords would match nearly every line anyway.
const minKeyword = 3

// CompiledPack is a RulePack with its patterns compiled. It is immutable
// and may be shared by any number of trackers.
type CompiledPack struct {
	Engine   string
	detect   []string
	detectRe *regexp.Regexp
	phases   []compiledPhase
	failures []compiledFailure
	frames   []FrameRule
	metrics  []compiledMetric
}

type compiledPhase struct {
	PhaseRule
	re                 *regexp.Regexp
	done, total, label int // submatch numbers of the named groups, or -1
	groups             bool
}

type compiledFailure struct {
	FailureRule
	re *regexp.Regexp
}

// Compile checks p and compiles its patterns. Errors name the rule by its
// index and field, e.g. "pack sglang: failures[3].pattern: …".
func (p RulePack) Compile() (*CompiledPack, error) {
	c := &CompiledPack{Engine: p.Engine, detect: p.Detect}
	for i, kw := range p.Detect {
		if len(kw) < minKeyword {
			return nil, fmt.Errorf("pack %s: detect[%d]: keyword %q is shorter than %d bytes", p.Engine, i, kw, minKeyword)
		}
	}
	if p.DetectPattern != "" {
		re, err := regexp.Compile(p.DetectPattern)
		if err != nil {
			return nil, fmt.Errorf("pack %s: detect_pattern: %w", p.Engine, err)
		}
		c.detectRe = re
	}
	for i, r := range p.Phases {
		re, err := compileRule(fmt.Sprintf("pack %s: phases[%d]", p.Engine, i), r.Keywords, r.Pattern, r.Phase, r.InPhases)
		if err != nil {
			return nil, err
		}
		if err := checkPhases(fmt.Sprintf("pack %s: phases[%d].ends", p.Engine, i), r.Ends, nil); err != nil {
			return nil, err
		}
		cp := compiledPhase{PhaseRule: r, re: re, done: -1, total: -1, label: -1}
		if re != nil {
			cp.done, cp.total, cp.label = re.SubexpIndex("done"), re.SubexpIndex("total"), re.SubexpIndex("label")
			cp.groups = cp.done >= 0 || cp.total >= 0 || cp.label >= 0
		}
		c.phases = append(c.phases, cp)
	}
	for i, r := range p.Failures {
		where := fmt.Sprintf("pack %s: failures[%d]", p.Engine, i)
		re, err := compileRule(where, r.Keywords, r.Pattern, r.Phase, r.InPhases)
		if err != nil {
			return nil, err
		}
		if err := checkPhases(where+".latest", r.Latest, nil); err != nil {
			return nil, err
		}
		if err := checkPhases(where+".usual", r.Usual, nil); err != nil {
			return nil, err
		}
		if r.Cause == "" {
			return nil, fmt.Errorf("%s.cause: empty", where)
		}
		c.failures = append(c.failures, compiledFailure{FailureRule: r, re: re})
	}
	for i, r := range p.Frames {
		where := fmt.Sprintf("pack %s: frames[%d]", p.Engine, i)
		if r.Phase == "" && r.Cause == "" {
			return nil, fmt.Errorf("%s: neither phase nor cause", where)
		}
		if err := checkPhases(where, r.Phase, nil); err != nil {
			return nil, err
		}
		if len(r.Funcs) == 0 && len(r.Files) == 0 {
			return nil, fmt.Errorf("%s: neither funcs nor files", where)
		}
	}
	c.frames = p.Frames
	for i, r := range p.Metrics {
		m, err := compileMetric(fmt.Sprintf("pack %s: metrics[%d]", p.Engine, i), r)
		if err != nil {
			return nil, err
		}
		c.metrics = append(c.metrics, m)
	}
	return c, nil
}

// compileRule checks the fields phase and failure rules share and compiles
// the pattern (nil when the keywords alone decide).
func compileRule(where string, keywords []string, pattern string, phase Phase, in []Phase) (*regexp.Regexp, error) {
	if err := checkPhases(where, phase, in); err != nil {
		return nil, err
	}
	if len(keywords) == 0 {
		return nil, fmt.Errorf("%s.keywords: empty (every rule needs a literal keyword)", where)
	}
	for j, kw := range keywords {
		if len(kw) < minKeyword {
			return nil, fmt.Errorf("%s.keywords[%d]: %q is shorter than %d bytes", where, j, kw, minKeyword)
		}
	}
	if pattern == "" {
		return nil, nil
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, fmt.Errorf("%s.pattern: %w", where, err)
	}
	return re, nil
}

func checkPhases(where string, p Phase, in []Phase) error {
	if p != "" && !p.Path() {
		return fmt.Errorf("%s.phase: %q is not a startup phase", where, p)
	}
	for j, q := range in {
		if !q.Path() {
			return fmt.Errorf("%s.in_phases[%d]: %q is not a startup phase", where, j, q)
		}
	}
	return nil
}

// CompilePacks compiles each pack; the first error is returned.
func CompilePacks(packs []RulePack) ([]*CompiledPack, error) {
	out := make([]*CompiledPack, 0, len(packs))
	for _, p := range packs {
		c, err := p.Compile()
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// match reports whether the rule's pattern matches s; loc holds the
// submatch positions when the rule has progress groups.
func (r *compiledPhase) match(s string) (loc []int, ok bool) {
	switch {
	case r.re == nil:
		return nil, true
	case r.groups:
		loc = r.re.FindStringSubmatchIndex(s)
		return loc, loc != nil
	default:
		return nil, r.re.MatchString(s)
	}
}

// progress reads the rule's progress groups out of a match.
func (r *compiledPhase) progress(s string, loc []int) Progress {
	p := Progress{Label: r.Label}
	if l := group(s, loc, r.label); l != "" {
		p.Label = l
	}
	p.Done = atoi(group(s, loc, r.done))
	p.Total = atoi(group(s, loc, r.total))
	return p
}

func group(s string, loc []int, n int) string {
	if n < 0 || 2*n+1 >= len(loc) || loc[2*n] < 0 {
		return ""
	}
	return s[loc[2*n]:loc[2*n+1]]
}

// atoi parses the digits of s, ignoring anything else (tqdm counts carry
// no signs); it saturates rather than overflow on absurd input.
func atoi(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= '0' && c <= '9' && n < 1<<40 {
			n = n*10 + int(c-'0')
		}
	}
	return n
}

func (r *compiledFailure) match(s string) bool {
	for _, u := range r.Unless {
		if strings.Contains(s, u) {
			return false
		}
	}
	return r.re == nil || r.re.MatchString(s)
}

// raisedBy reports whether the rule holds for a line whose traceback was
// raised in function fn ("" when the line ended none, or it is not known).
func (r *compiledFailure) raisedBy(fn string) bool {
	return len(r.RaisedIn) == 0 || fn != "" && slices.Contains(r.RaisedIn, fn)
}

// outranks reports whether r wins over o whatever their order in the log.
func (r *compiledFailure) outranks(o *compiledFailure) bool {
	return slices.Contains(r.Outranks, o.Cause)
}

func inPhases(in []Phase, p Phase) bool { return len(in) == 0 || slices.Contains(in, p) }

// kwIndex finds which of many literal keywords occur in a line with one
// pass over its bytes: a bitset of hashes of the keywords' first three
// bytes rules out almost every position, and only at the rest is a keyword
// compared. (A map lookup per position, or per bigram hit, cost several
// times more: common bigrams such as ": " are everywhere.)
type kwIndex struct {
	bits [1 << 16 / 64]uint64
	// quad holds hashes of the keywords' first four bytes, and short the
	// trigram hashes of three-byte keywords: a position whose trigram is
	// common ("Mem", "cor", "Fil") is ruled out by its four bytes before
	// the map is consulted.
	quad  [1 << 16 / 64]uint64
	short [1 << 16 / 64]uint64
	by    map[uint16][]kwEntry
}

type kwEntry struct {
	kw string
	id int
}

func newKWIndex() *kwIndex { return &kwIndex{by: map[uint16][]kwEntry{}} }

// tri hashes the three bytes at the start of s to 16 bits.
func tri(a, b, c byte) uint16 {
	return uint16((uint32(a)<<16 | uint32(b)<<8 | uint32(c)) * 0x9E3779B1 >> 16)
}

// quadHash hashes the four bytes at the start of s to 16 bits.
func quadHash(a, b, c, d byte) uint16 {
	return uint16((uint32(a)<<24 | uint32(b)<<16 | uint32(c)<<8 | uint32(d)) * 0x85EBCA6B >> 16)
}

// add indexes kw, which must be at least minKeyword bytes long.
func (x *kwIndex) add(kw string, id int) {
	h := tri(kw[0], kw[1], kw[2])
	x.bits[h>>6] |= 1 << (h & 63)
	if len(kw) >= 4 {
		q := quadHash(kw[0], kw[1], kw[2], kw[3])
		x.quad[q>>6] |= 1 << (q & 63)
	} else {
		x.short[h>>6] |= 1 << (h & 63)
	}
	x.by[h] = append(x.by[h], kwEntry{kw, id})
}

// scan sets bit id in hit for every keyword found in s.
func (x *kwIndex) scan(s string, hit []uint64) {
	for i := 0; i+2 < len(s); i++ {
		h := tri(s[i], s[i+1], s[i+2])
		if x.bits[h>>6]&(1<<(h&63)) == 0 {
			continue
		}
		if x.short[h>>6]&(1<<(h&63)) == 0 {
			if i+3 >= len(s) {
				continue
			}
			if q := quadHash(s[i], s[i+1], s[i+2], s[i+3]); x.quad[q>>6]&(1<<(q&63)) == 0 {
				continue
			}
		}
		for _, e := range x.by[h] {
			if strings.HasPrefix(s[i:], e.kw) {
				hit[e.id>>6] |= 1 << (e.id & 63)
			}
		}
	}
}
