package cli

import (
	"bytes"
	"strings"
	"testing"
)

// TestParseArgs: flags before, among and after the host names, as people
// type them; -h is help (stop, exit 0, on the output stream); a bad flag
// is a usage error on the error stream.
func TestParseArgs(t *testing.T) {
	for _, tc := range []struct {
		args      []string
		code      int
		stop      bool
		positions string
		json      bool
		stdout    string // printed to out
		stderr    string // printed to errOut
	}{
		{args: []string{"gpu1", "--json", "gpu2"}, positions: "gpu1 gpu2", json: true},
		{args: []string{"--json", "gpu1"}, positions: "gpu1", json: true},
		{args: []string{"-j", "gpu1"}, positions: "gpu1", json: true},
		{args: []string{"gpu1", "--", "--json"}, positions: "gpu1 --json"},
		{args: []string{"-h"}, stop: true, stdout: "Usage: bringup watch"},
		{args: []string{"gpu1", "--help"}, stop: true, stdout: "-j, --json"},
		{args: []string{"gpu1", "--nope"}, code: ExitUsage, stop: true, stderr: "unknown flag: --nope"},
		{args: []string{"--jsno"}, code: ExitUsage, stop: true, stderr: "did you mean --json?"},
		{args: []string{"-json"}, code: ExitUsage, stop: true, stderr: "long flags take two dashes: --json"},
		{args: []string{"--json=maybe"}, code: ExitUsage, stop: true, stderr: "Run 'bringup watch --help'"},
	} {
		var out, errOut bytes.Buffer
		fs := NewFlags(&out, &errOut, "watch", "bringup watch [--json] [HOST...]")
		asJSON := fs.BoolP("json", "j", false, "JSON lines")
		code, stop := ParseArgs(fs, tc.args)
		if code != tc.code || stop != tc.stop {
			t.Errorf("%q: code %d stop %v, want %d %v", tc.args, code, stop, tc.code, tc.stop)
			continue
		}
		if !strings.Contains(out.String(), tc.stdout) || tc.stdout == "" && out.Len() > 0 {
			t.Errorf("%q: stdout %q, want %q", tc.args, out.String(), tc.stdout)
		}
		if !strings.Contains(errOut.String(), tc.stderr) || tc.stderr == "" && errOut.Len() > 0 {
			t.Errorf("%q: stderr %q, want %q", tc.args, errOut.String(), tc.stderr)
		}
		if stop {
			continue
		}
		if got := strings.Join(fs.Args(), " "); got != tc.positions || *asJSON != tc.json {
			t.Errorf("%q: positional %q json %v, want %q %v", tc.args, got, *asJSON, tc.positions, tc.json)
		}
		if fs.Changed("json") != tc.json {
			t.Errorf("%q: Changed(json) = %v", tc.args, fs.Changed("json"))
		}
	}
}

// TestParseRefusesPositional: a flags-only command names the stray word.
func TestParseRefusesPositional(t *testing.T) {
	var out, errOut bytes.Buffer
	fs := NewFlags(&out, &errOut, "demo", "bringup demo")
	if code, stop := Parse(fs, []string{"gpu1"}); code != ExitUsage || !stop || !strings.Contains(errOut.String(), `unexpected argument "gpu1"`) {
		t.Errorf("code %d stop %v, output %q", code, stop, errOut.String())
	}
	fs = NewFlags(&out, &errOut, "explain", "bringup explain")
	rules := fs.StringArray("rules", nil, "rule file")
	if _, stop := Parse(fs, []string{"--rules", "a.yaml", "--rules", "b.yaml"}); stop || strings.Join(*rules, ",") != "a.yaml,b.yaml" {
		t.Errorf("repeated --rules: %q", *rules)
	}
}

// TestUsageShowsArgumentNames: a backquoted word in a flag's usage names
// its argument (--record FILE); the --record usage once read
// "-record bringup replay FILE" because its text quoted a command.
func TestUsageShowsArgumentNames(t *testing.T) {
	var out bytes.Buffer
	fs := NewFlags(&out, &out, "demo", "bringup demo")
	fs.String("record", "", "record every event to `FILE`, to play back with bringup replay FILE")
	fs.PrintUsage(&out)
	if !strings.Contains(out.String(), "--record FILE   record every event to FILE") {
		t.Errorf("usage:\n%s", out.String())
	}
}

// TestSuggest: near misses get a suggestion, far ones none.
func TestSuggest(t *testing.T) {
	cmds := []string{"", "demo", "watch", "status", "doctor", "mode", "redeploy", "restart", "stop", "reset-failed", "rollout", "explain", "replay", "version", "help"}
	for word, want := range map[string]string{
		"wtach": "watch", "watc": "watch", "stauts": "status", "doctr": "doctor", "rollot": "rollout",
		"reset-faild": "reset-failed", "replya": "replay", "hlep": "help",
		"xyz": "", "deploy": "redeploy", "w": "", "nosuch": "",
	} {
		if got := Suggest(word, cmds); got != want {
			t.Errorf("Suggest(%q) = %q, want %q", word, got, want)
		}
	}
}

// TestExitCodes: the table holds each code once, in order, with the
// values scripts rely on.
func TestExitCodes(t *testing.T) {
	want := []int{0, 1, 2, 3, 4, 130}
	got := ExitCodes()
	if len(got) != len(want) {
		t.Fatalf("%d codes, want %d", len(got), len(want))
	}
	for i, c := range got {
		if c.Code != want[i] || c.Meaning == "" {
			t.Errorf("row %d: %+v, want code %d with a meaning", i, c, want[i])
		}
	}
}
