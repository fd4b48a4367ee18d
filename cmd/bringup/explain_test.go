package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bringup-dev/bringup/cmd/bringup/output"
	"github.com/bringup-dev/bringup/remote/startup/corpus"
)

func runExplainArgs(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	e := env{stdin: strings.NewReader(stdin), stdout: &out, stderr: &errOut, getenv: func(string) string { return "" }}
	code := run(context.Background(), e, append([]string{"explain"}, args...))
	return code, out.String(), errOut.String()
}

// corpusFile writes a corpus log's text (its header left out) to a file.
func corpusFile(t *testing.T, name string) (string, corpus.Log) {
	t.Helper()
	l, err := corpus.Read(filepath.Join(corpus.Dir(), name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), name+".log")
	if err := os.WriteFile(p, []byte(l.Body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p, l
}

// TestExplainCorpusLogs runs `bringup explain` on real logs of the corpus,
// a failure, a startup that served and one cut short, from a file and
// from standard input, and checks the exit codes and what is printed.
func TestExplainCorpusLogs(t *testing.T) {
	for _, tt := range []struct {
		name string
		code int
		want []string
	}{
		{"sglang-7918-capture-moe-fused-gate-not-permitted", explainFailed, []string{"FAILED in graph-capture", "[graph-capture-host-sync]", "hint:", "operation not permitted when stream is capturing"}},
		{"sglang-2431-ready-notebook-then-chat-500", explainServed, []string{"SERVED", "weights", "graph-capture"}},
		{"vllm-7593-tp8-l4-capture-cut-running", explainUndecided, []string{"UNDECIDED", "graph-capture"}},
	} {
		file, l := corpusFile(t, tt.name)
		code, out, errOut := runExplainArgs(t, "", file)
		if code != tt.code {
			t.Errorf("%s: exit %d, want %d\n%s%s", tt.name, code, tt.code, out, errOut)
		}
		for _, w := range tt.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: output lacks %q:\n%s", tt.name, w, out)
			}
		}
		// The same text on standard input, as JSON.
		code, out, _ = runExplainArgs(t, l.Body, "--json", "-")
		lines := strings.Split(strings.TrimSpace(out), "\n")
		for i, l := range lines {
			if err := output.ValidateLine([]byte(l)); err != nil {
				t.Errorf("%s: line %d: %v\n%s", tt.name, i+1, err, l)
			}
		}
		var sum output.Line
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil || sum.Kind != "summary" || sum.Command != "explain" ||
			code != tt.code || sum.Exit == nil || *sum.Exit != tt.code || sum.Lines == nil || *sum.Lines == 0 || len(sum.Trail) == 0 {
			t.Errorf("%s --json -: exit %d, summary %q (%v)", tt.name, code, lines[len(lines)-1], err)
		}
		if (sum.Outcome == "failed") != (sum.Cause != "") || (tt.code == explainFailed) != (sum.Outcome == "failed") {
			t.Errorf("%s: summary outcome %q, cause %q", tt.name, sum.Outcome, sum.Cause)
		}
		for _, l := range lines[:len(lines)-1] {
			var w output.Line
			if err := json.Unmarshal([]byte(l), &w); err != nil || w.Host != "log" || w.Kind == "" || w.Latency != nil {
				t.Errorf("%s: line %q is not in watch's shape without a latency (%v)", tt.name, l, err)
			}
		}
	}
}

func TestExplainUsage(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"/nonexistent/log"}, "no such file"},
		{[]string{"--engine", "tgi", "x"}, `--engine "tgi"`},
		{[]string{"-", "-"}, "stdin (-) named 2 times"},
		{[]string{"/nonexistent/a", "/nonexistent/b"}, "no such file"},
		{[]string{"--rules", "/nonexistent.yaml", "x"}, "--rules"},
	} {
		code, _, errOut := runExplainArgs(t, "", tt.args...)
		if code != exitUsage || !strings.Contains(errOut, tt.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tt.args, code, errOut, exitUsage, tt.want)
		}
	}
	if code, _, errOut := runExplainArgs(t, "", "-"); code != exitUsage || !strings.Contains(errOut, "no log lines") {
		t.Errorf("empty stdin: exit %d, %q", code, errOut)
	}
}
