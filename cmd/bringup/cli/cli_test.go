package cli

import (
	"bytes"
	"strings"
	"testing"
)

// TestParseArgs: flags before, among and after the host names, as people
// type them; -h is help (stop, exit 0); a bad flag is a usage error.
func TestParseArgs(t *testing.T) {
	for _, tc := range []struct {
		args      []string
		code      int
		stop      bool
		positions string
		json      bool
	}{
		{[]string{"gpu1", "--json", "gpu2"}, 0, false, "gpu1 gpu2", true},
		{[]string{"--json", "gpu1"}, 0, false, "gpu1", true},
		{[]string{"gpu1", "--", "--json"}, 0, false, "gpu1 --json", false},
		{[]string{"-h"}, 0, true, "", false},
		{[]string{"gpu1", "--nope"}, ExitUsage, true, "", false},
	} {
		var out bytes.Buffer
		fs := NewFlags(&out, "watch", "bringup watch [--json] [HOST...]")
		asJSON := fs.Bool("json", false, "JSON lines")
		code, stop := ParseArgs(fs, tc.args)
		if code != tc.code || stop != tc.stop {
			t.Errorf("%q: code %d stop %v, want %d %v", tc.args, code, stop, tc.code, tc.stop)
			continue
		}
		if stop {
			if !strings.Contains(out.String(), "Usage: bringup watch") {
				t.Errorf("%q: no usage printed: %q", tc.args, out.String())
			}
			continue
		}
		if got := strings.Join(fs.Args(), " "); got != tc.positions || *asJSON != tc.json {
			t.Errorf("%q: positional %q json %v, want %q %v", tc.args, got, *asJSON, tc.positions, tc.json)
		}
		if Given(fs, "json") != tc.json {
			t.Errorf("%q: Given(json) = %v", tc.args, Given(fs, "json"))
		}
	}
}

// TestParseRefusesPositional: a flags-only command names the stray word.
func TestParseRefusesPositional(t *testing.T) {
	var out bytes.Buffer
	fs := NewFlags(&out, "demo", "bringup demo")
	if code, stop := Parse(fs, []string{"gpu1"}); code != ExitUsage || !stop || !strings.Contains(out.String(), `unexpected argument "gpu1"`) {
		t.Errorf("code %d stop %v, output %q", code, stop, out.String())
	}
	var rules Strings
	fs = NewFlags(&out, "explain", "bringup explain")
	fs.Var(&rules, "rules", "rule file")
	if _, stop := Parse(fs, []string{"--rules", "a.yaml", "--rules", "b.yaml"}); stop || rules.String() != "a.yaml,b.yaml" {
		t.Errorf("repeated --rules: %q", rules)
	}
}
