package startup

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"

	"go.yaml.in/yaml/v3"
)

// ParsePacks reads a user rule file: YAML holding one pack or a list of
// packs, in the shape of RulePack (the built-in packs are the same data).
// Errors name the file and line: "rules.yaml:12: pack mykernel:
// failures[0].pattern: …". Each pack is compiled here, so a pack that
// loads is one the tracker can use.
//
// The file is one YAML document, decoded whole: an anchor in one pack
// serves an alias in another, as YAML defines anchors (they hold from
// where they are set to the end of their document). A second document is
// refused rather than left unread, and an alias with no anchor before it
// is named with its line.
func ParsePacks(name string, data []byte) ([]RulePack, error) {
	var root yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&root); err != nil {
		return nil, fmt.Errorf("%s%w", name, anchorErr(data, yamlErr(err)))
	}
	if root.Kind != yaml.DocumentNode || len(root.Content) == 0 {
		return nil, fmt.Errorf("%s: empty rule file", name)
	}
	for {
		var next yaml.Node
		err := dec.Decode(&next)
		if errors.Is(err, io.EOF) {
			break
		}
		if err == nil && emptyDocument(&next) {
			continue // an empty document (a trailing "---") holds nothing to leave unread
		}
		line := next.Line
		if line == 0 {
			line = lastLine(&root) + 1
		}
		return nil, fmt.Errorf("%s:%d: a second YAML document: a rule file is one document holding one pack or a list of packs (anchors do not reach across documents)", name, line)
	}
	doc := root.Content[0]
	if doc.Kind == yaml.AliasNode && doc.Alias != nil {
		doc = doc.Alias
	}
	items := []*yaml.Node{doc}
	var packs []RulePack
	if doc.Kind == yaml.SequenceNode {
		items = doc.Content
		if err := decodeStrict(data, &packs); err != nil {
			return nil, fmt.Errorf("%s:%w", name, err)
		}
	} else {
		packs = make([]RulePack, 1)
		if err := decodeStrict(data, &packs[0]); err != nil {
			return nil, fmt.Errorf("%s:%w", name, err)
		}
	}
	if len(packs) != len(items) {
		return nil, fmt.Errorf("%s:%d: %d packs decoded from a list of %d", name, doc.Line, len(packs), len(items))
	}
	for i := range packs {
		packs[i] = shownText(packs[i])
		if _, err := packs[i].Compile(); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, errLine(items[i], err), err)
		}
	}
	return packs, nil
}

// decodeStrict decodes the document in data into v, refusing unknown
// fields (a typo in a field name must not silently disable a rule). The
// whole document is decoded at once, so that aliases find their anchors
// wherever in it they are, and yaml's own bound on aliasing holds.
func decodeStrict(data []byte, v any) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%d: %w", yamlLine(err), yamlErr(err))
	}
	return nil
}

// emptyDocument reports whether a document holds nothing (a trailing
// "---", comments, a bare null).
func emptyDocument(n *yaml.Node) bool {
	return len(n.Content) == 0 || len(n.Content) == 1 && n.Content[0].Kind == yaml.ScalarNode && n.Content[0].Tag == "!!null" && n.Content[0].Value == ""
}

// lastLine is the last line a node of the tree under n starts on.
func lastLine(n *yaml.Node) int {
	line := n.Line
	for _, c := range n.Content {
		line = max(line, lastLine(c))
	}
	return line
}

// unknownAnchorRe is yaml's error for an alias whose anchor is not set
// before it; it says no line.
var unknownAnchorRe = regexp.MustCompile(`unknown anchor '([^']*)' referenced`)

// anchorErr gives yaml's error its place: ":LINE: …" for an alias with no
// anchor (found by its text: yaml says only the name), ": …" otherwise.
func anchorErr(data []byte, err error) error {
	m := unknownAnchorRe.FindStringSubmatch(err.Error())
	if m == nil {
		return fmt.Errorf(": %w", err)
	}
	alias := regexp.MustCompile(`(^|[\s\[{,:-])\*` + regexp.QuoteMeta(m[1]) + `($|[\s\]},])`)
	for i, line := range bytes.Split(data, []byte("\n")) {
		if alias.Match(line) {
			return fmt.Errorf(":%d: alias *%s: no anchor &%s before it in this YAML document: %w", i+1, m[1], m[1], err)
		}
	}
	return fmt.Errorf(": %w", err)
}

var (
	yamlLineRe   = regexp.MustCompile(`line (\d+)`)
	yamlPrefixRe = regexp.MustCompile(`^line \d+: `)
)

func yamlLine(err error) int {
	m := yamlLineRe.FindStringSubmatch(err.Error())
	if m == nil {
		return 1
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

func yamlErr(err error) error {
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		// The line is in the prefix the caller writes: drop yaml's own.
		return errors.New(yamlPrefixRe.ReplaceAllString(te.Errors[0], ""))
	}
	return err
}

var ruleIndexRe = regexp.MustCompile(`(phases|failures|frames|metrics)\[(\d+)\]`)

// errLine finds the line of the rule a compile error names
// ("failures[3]") in the pack's node, or the pack's own line.
func errLine(pack *yaml.Node, err error) int {
	m := ruleIndexRe.FindStringSubmatch(err.Error())
	if m == nil || pack.Kind != yaml.MappingNode {
		return pack.Line
	}
	i, _ := strconv.Atoi(m[2])
	for k := 0; k+1 < len(pack.Content); k += 2 {
		if pack.Content[k].Value == m[1] && pack.Content[k+1].Kind == yaml.SequenceNode && i < len(pack.Content[k+1].Content) {
			return pack.Content[k+1].Content[i].Line
		}
	}
	return pack.Line
}
