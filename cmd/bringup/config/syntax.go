package config

import (
	"bytes"
	"errors"
	"io"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// maxSyntaxSearch bounds the lines syntaxError re-parses to place an
// error (one parse per line of the file: a config is tens of lines).
const maxSyntaxSearch = 5000

// yamlLine is how the YAML parser places its syntax errors.
var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// syntaxError turns a YAML parser error on data into an Error at the line
// and column of the problem, in plain words. The parser places many
// errors at the start of the construct they are found in (a bad line 6
// under a mapping that begins at line 4 was "line 5: did not find
// expected key"), so the line is found again here: a tab in a line's
// indent is the problem wherever the parser says it is; otherwise the
// problem is on the first line whose prefix of the file fails as the
// whole file does.
func syntaxError(file string, data []byte, err error) *Error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
	}
	lines := strings.Split(string(data), "\n")
	if strings.Contains(msg, "tab") || strings.Contains(msg, "cannot start any token") {
		for i, l := range lines {
			indent := l[:len(l)-len(strings.TrimLeft(l, " \t"))]
			if c := strings.IndexByte(indent, '\t'); c >= 0 {
				return &Error{File: file, Line: i + 1, Column: c + 1, Msg: "a tab character; YAML indents with spaces"}
			}
		}
	}
	if len(lines) <= maxSyntaxSearch {
		for k := 1; k <= len(lines); k++ {
			if m, failed := parseFails(strings.Join(lines[:k], "\n")); failed && m == msg {
				line = k
				break
			}
		}
	}
	col := 0
	if line > 0 && line <= len(lines) {
		l := lines[line-1]
		col = len(l) - len(strings.TrimLeft(l, " \t")) + 1
		// Where on the line: the second ': ', the bracket left open, the
		// quote that opens the string the file ends in.
		at := -1
		switch {
		case strings.Contains(msg, "mapping values are not allowed"):
			if first := strings.Index(l, ": "); first >= 0 {
				if second := strings.Index(l[first+2:], ": "); second >= 0 {
					at = first + 2 + second
				}
			}
		case strings.Contains(msg, "or ']'"):
			at = strings.LastIndexByte(l, '[')
		case strings.Contains(msg, "or '}'"):
			at = strings.LastIndexByte(l, '{')
		case strings.Contains(msg, "end of stream"):
			at = strings.IndexAny(l, `"'`)
		}
		if at >= 0 {
			col = at + 1
		}
	}
	return &Error{File: file, Line: line, Column: col, Msg: plainSyntax(msg)}
}

// parseFails parses text as YAML and returns the parser's message (less
// its "line N: " place) when it fails.
func parseFails(text string) (string, bool) {
	dec := yaml.NewDecoder(bytes.NewReader([]byte(text)))
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			return "", false
		}
		if err != nil {
			if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
				return m[2], true
			}
			return strings.TrimPrefix(err.Error(), "yaml: "), true
		}
	}
}

// plainSyntax says a YAML parser message in plain words; one it does not
// know stays as the parser said it.
func plainSyntax(msg string) string {
	for _, p := range []struct{ parser, plain string }{
		{"did not find expected key", "this line's indent matches no key above it (indent it as its siblings, with spaces)"},
		{"did not find expected ',' or ']'", "a [ list is not closed: a ',' or ']' is missing"},
		{"did not find expected ',' or '}'", "a { map is not closed: a ',' or '}' is missing"},
		{"found unexpected end of stream", "the file ends inside a quoted string or an unclosed [ or {"},
		{"mapping values are not allowed in this context", "a second ': ' on one line; quote a value that holds ': '"},
		{"did not find expected '-' indicator", "a line among a list's items is not an item: start it with '- ' or indent it under one"},
		{"did not find expected node content", "a value is missing here"},
		{"could not find expected ':'", "a key without its ':'"},
		{"found character that cannot start any token", "a character that cannot start a value (a tab, @ or `): quote the value"},
		{"found unknown escape character", "an unknown \\ escape in a double-quoted string: use single quotes, or \\\\"},
	} {
		if strings.Contains(msg, p.parser) {
			return p.plain
		}
	}
	return msg
}
