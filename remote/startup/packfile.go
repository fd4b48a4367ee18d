package startup

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strconv"

	"go.yaml.in/yaml/v3"
)

// ParsePacks reads a user rule file: YAML holding one pack or a list of
// packs, in the shape of RulePack (the built-in packs are the same data).
// Errors name the file and line: "rules.yaml:12: pack mykernel:
// failures[0].pattern: …". Each pack is compiled here, so a pack that
// loads is one the tracker can use.
func ParsePacks(name string, data []byte) ([]RulePack, error) {
	var root yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&root); err != nil {
		return nil, fmt.Errorf("%s: %w", name, yamlErr(err))
	}
	if root.Kind != yaml.DocumentNode || len(root.Content) == 0 {
		return nil, fmt.Errorf("%s: empty rule file", name)
	}
	doc := root.Content[0]
	items := []*yaml.Node{doc}
	if doc.Kind == yaml.SequenceNode {
		items = doc.Content
	}
	var packs []RulePack
	for _, n := range items {
		var p RulePack
		if err := decodeStrict(n, &p); err != nil {
			return nil, fmt.Errorf("%s:%w", name, err)
		}
		p = shownText(p)
		if _, err := p.Compile(); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, errLine(n, err), err)
		}
		packs = append(packs, p)
	}
	return packs, nil
}

// decodeStrict decodes n into v, refusing unknown fields (a typo in a
// field name must not silently disable a rule).
func decodeStrict(n *yaml.Node, v any) error {
	b, err := yaml.Marshal(n)
	if err != nil {
		return fmt.Errorf("%d: %w", n.Line, err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		// Lines in err count from the node's own start.
		return fmt.Errorf("%d: %w", n.Line+yamlLine(err)-1, yamlErr(err))
	}
	return nil
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
