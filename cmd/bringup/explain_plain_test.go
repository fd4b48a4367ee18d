package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/cmd/bringup/output"
	"github.com/bringup-dev/bringup/remote/sim/sglang"
	"github.com/bringup-dev/bringup/remote/sim/vllm"
)

// simPair writes one simulated vLLM startup twice: as journalctl's
// short-iso output (every line timed by journald) and as a plain paste of
// the same lines (`journalctl -o cat`: only the lines vLLM's logger
// stamped carry a time; tqdm bars and uvicorn's lines carry none).
func simPair(t *testing.T, failure sglang.Failure) (journalPath, plainPath string) {
	t.Helper()
	p := sglang.Defaults()
	p.Failure = failure
	t0 := time.Date(2026, 3, 1, 3, 0, 0, 0, time.UTC)
	var j, plain strings.Builder
	for _, l := range vllm.Play(sglang.New(p), vllm.Args{}).Lines {
		if l.Text == nil {
			continue
		}
		at := t0.Add(l.At)
		for _, part := range strings.Split(strings.ReplaceAll(l.Text(at), "\r", "\n"), "\n") {
			if strings.TrimSpace(part) == "" {
				continue
			}
			fmt.Fprintf(&j, "%s gpu1 vllm[4242]: %s\n", at.Format("2006-01-02T15:04:05-0700"), part)
			fmt.Fprintf(&plain, "%s\n", part)
		}
	}
	dir := t.TempDir()
	journalPath, plainPath = filepath.Join(dir, "journal.log"), filepath.Join(dir, "plain.log")
	for path, text := range map[string]string{journalPath: j.String(), plainPath: plain.String()} {
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return journalPath, plainPath
}

// trailOf is explain's trail: each phase and what it says of its length.
func trailOf(t *testing.T, text string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^  ([a-z-]+) +(.+)$`).FindAllStringSubmatch(text, -1) {
		out[m[1]] = m[2]
	}
	return out
}

// TestExplainPlainAgreesWithJournal: a plain paste and the journal's
// version of the same startup give the same phase durations, or, where a
// phase begins or ends on a line that carries no time of its own, none:
// the plain paste used to say kv-cache 18s (the graph-capture bar's time
// taken from the line before it) where the journal says 26s.
func TestExplainPlainAgreesWithJournal(t *testing.T) {
	for _, failure := range []sglang.Failure{sglang.FailNone, sglang.FailCapture, sglang.FailNCCL} {
		journalPath, plainPath := simPair(t, failure)
		texts := map[string]string{}
		for name, path := range map[string]string{"journal": journalPath, "plain": plainPath} {
			var out, errOut syncBuffer
			run(context.Background(), testEnv(&out, &errOut), []string{"explain", path})
			texts[name] = out.String()
		}
		journal, plain := trailOf(t, texts["journal"]), trailOf(t, texts["plain"])
		untimed := 0
		for phase, d := range plain {
			switch {
			case strings.HasPrefix(d, "— (a line without a time of its own bounds it)"):
				untimed++
			case d != journal[phase]:
				t.Errorf("%q: %s is %s in the plain paste, %s in the journal\nplain:\n%s\njournal:\n%s", failure, phase, d, journal[phase], texts["plain"], texts["journal"])
			}
		}
		if untimed == 0 || plain["weights"] != "8m30s" {
			t.Errorf("%q: the plain paste marks no span untimed, or lost the timed ones:\n%s", failure, texts["plain"])
		}
	}
}

// TestExplainTimesAndLines: explain's text says when the failure was
// and where its evidence is in the log; an untimed log's JSON lines carry
// no time (they used to say 2026-01-01T00:00:00Z) and still validate.
func TestExplainTimesAndLines(t *testing.T) {
	journalPath, _ := simPair(t, sglang.FailCapture)
	var out, errOut syncBuffer
	if code := run(context.Background(), testEnv(&out, &errOut), []string{"explain", journalPath}); code != explainFailed {
		t.Fatalf("exit %d\n%s%s", code, out.String(), errOut.String())
	}
	if !regexp.MustCompile(`(?m)^  at: 2026-03-01 03:\d\d:\d\d$`).MatchString(out.String()) ||
		!regexp.MustCompile(`(?m)^    line \d+: .*torch\.AcceleratorError: CUDA error: operation not permitted when stream is capturing$`).MatchString(out.String()) {
		t.Errorf("no failure time or evidence line numbers:\n%s", out.String())
	}

	dir := t.TempDir()
	path := filepath.Join(dir, "untimed.log")
	paste := "Load weight begin. avail mem=78.00 GB\nLoad weight end. type=X, avail mem=62 GB\nMemory pool end. avail mem=18.61 GB\n" +
		"Capture cuda graph begin. This can take up to several minutes.\nException in run_tp_server:\nTraceback (most recent call last):\n" +
		"  File \"/x/cuda_graph_runner.py\", line 300, in capture\ntorch.AcceleratorError: CUDA error: operation not permitted when stream is capturing\n"
	if err := os.WriteFile(path, []byte(paste), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut = syncBuffer{}, syncBuffer{}
	run(context.Background(), testEnv(&out, &errOut), []string{"explain", "--json", path})
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	for i, l := range lines {
		if err := output.ValidateLine([]byte(l)); err != nil {
			t.Errorf("line %d: %v\n%s", i+1, err, l)
		}
		if i < len(lines)-1 && strings.Contains(l, `"time"`) {
			t.Errorf("an untimed log's line %d has a time: %s", i+1, l)
		}
	}
	if last := lines[len(lines)-1]; !strings.Contains(last, `"timed":false`) || strings.Contains(last, "2026-01-01") || !strings.Contains(last, `"trail":[{"phase":"starting"}`) {
		t.Errorf("summary of an untimed log: %s", last)
	}
	out, errOut = syncBuffer{}, syncBuffer{}
	run(context.Background(), testEnv(&out, &errOut), []string{"explain", path})
	if strings.Contains(out.String(), "  at: ") || !strings.Contains(out.String(), "    line 8: torch.AcceleratorError") {
		t.Errorf("an untimed log's text:\n%s", out.String())
	}
}
