package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/cmd/bringup/output"
	"github.com/bringup-dev/bringup/remote/startup/corpus"
	"github.com/bringup-dev/bringup/remote/testkit/testbed"
)

// corpusSample picks at least n logs of the real-log corpus: one of every
// class first (each cause, served, running), then more in name order.
func corpusSample(logs []corpus.Log, n int) []corpus.Log {
	var out []corpus.Log
	seen := map[string]bool{}
	taken := map[string]bool{}
	for _, l := range logs {
		if !seen[l.Class()] {
			seen[l.Class()], taken[l.Name] = true, true
			out = append(out, l)
		}
	}
	for _, l := range logs {
		if len(out) >= n {
			break
		}
		if !taken[l.Name] {
			out = append(out, l)
		}
	}
	return out
}

// TestCorpusOnTestbed replays real startup logs of the corpus as a unit's
// output into real journald on test hosts — the unit prints the log, then
// exits 1 when the startup failed, or stays up when it did not — and checks
// that `bringup watch --json` over SSH says what `bringup explain` says of
// the same text: the same cause, phase and root line for every failure, no
// failure for the rest.
func TestCorpusOnTestbed(t *testing.T) {
	logs, err := corpus.ReadAll(corpus.Dir())
	if err != nil {
		t.Fatal(err)
	}
	sample := corpusSample(logs, 18)
	const hosts = 3
	tb := testbed.StartWith(t, testbed.Options{Hosts: hosts})
	// Engine auto: the logs are SGLang's and vLLM's, and watch must tell.
	raw, err := os.ReadFile(filepath.Join(tb.Inventory(), "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte(strings.ReplaceAll(string(raw), "engine: sglang", "engine: auto")), 0o644); err != nil {
		t.Fatal(err)
	}
	w := &actWorld{tb: tb, cfg: cfg}
	dir := t.TempDir()
	for start := 0; start < len(sample); start += hosts {
		batch := sample[start:min(start+hosts, len(sample))]
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		names := make([]string, len(batch))
		want := map[string]output.Line{}
		for i, l := range batch {
			host := fmt.Sprintf("gpu%d", i+1)
			names[i] = host
			file := filepath.Join(dir, l.Name+".log")
			if err := os.WriteFile(file, []byte(l.Body), 0o644); err != nil {
				t.Fatal(err)
			}
			code, out, errOut := w.bringup(ctx, "explain", "--json", file)
			lines := strings.Split(strings.TrimSpace(out), "\n")
			var sum output.Line
			if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil || sum.Kind != "summary" || sum.Command != "explain" {
				t.Fatalf("%s: explain exit %d: no summary line (%v)\n%s%s", l.Name, code, err, out, errOut)
			}
			want[host] = sum
			tail := "exec sleep 600"
			if l.Expect == "failed" {
				tail = "exit 1"
			}
			// A watch follows a unit from 2 s before its main process
			// started (journal.Command's FromStart, whole seconds): the
			// previous log's lines, when they are younger than that,
			// are in its backlog as a run of their own. Seen twice in
			// seven runs, a replayed run's lines mixed into the new
			// one's. The wait keeps each log's run alone in the window,
			// as a unit restarted by a person would be.
			prev := `p=$(cut -c2- /var/lib/corpus/since 2>/dev/null | cut -d. -f1); if [ -n "$p" ]; then while [ "$(date +%s)" -lt $((p + 4)) ]; do sleep 0.2; done; fi; `
			w.sh(t, ctx, host, prev+"systemctl stop sglang; systemctl reset-failed sglang; mkdir -p /var/lib/corpus /run/systemd/system/sglang.service.d && "+
				"printf %s "+base64.StdEncoding.EncodeToString([]byte(l.Body))+" | base64 -d > /var/lib/corpus/log && "+
				`printf '[Service]\nExecStart=\nExecStart=/bin/sh -c "cat /var/lib/corpus/log; `+tail+`"\n' > /run/systemd/system/sglang.service.d/zz-corpus.conf && `+
				"systemctl daemon-reload && date +@%s.%N > /var/lib/corpus/since && systemctl start sglang")
		}
		_, out, errOut := w.bringup(ctx, append([]string{"watch", "--json", "--timeout", "15s", "--config", cfg}, names...)...)
		cancel()
		failed := readWatch(t, out).failed
		for i, l := range batch {
			host, x := names[i], want[names[i]]
			got, ok := failed[host]
			t.Logf("%s on %s: explain %s %v; watch %+v", l.Name, host, x.Outcome, x.Cause != "", got.Cause)
			switch {
			case x.Outcome != "failed" && ok:
				t.Errorf("%s: watch says %s in %s, explain says %s (%s)\n%s", l.Name, got.Cause, got.FailedIn, x.Outcome, l.Source, errOut)
			case x.Outcome == "failed" && !ok:
				t.Errorf("%s: watch saw no failure, explain says %s in %s (%s)\n%s%s", l.Name, x.Cause, x.FailedIn, l.Source, out, errOut)
			case x.Outcome == "failed":
				if got.Cause != x.Cause || got.FailedIn != x.FailedIn || len(got.Evidence) == 0 || len(x.Evidence) == 0 || got.Evidence[0] != x.Evidence[0] {
					t.Errorf("%s: watch says %s in %s (%q), explain %s in %s (%q) (%s)", l.Name, got.Cause, got.FailedIn, first(got.Evidence),
						x.Cause, x.FailedIn, first(x.Evidence), l.Source)
					t.Logf("the watch printed:\n%s\nand on stderr:\n%s", out, errOut)
					jctx, jcancel := context.WithTimeout(t.Context(), 30*time.Second)
					t.Logf("the host's journal of the unit since 10 s before this log's start:\n%s", w.sh(t, jctx, host,
						`journalctl -u sglang --no-pager -o json --output-fields=MESSAGE,_PID,_SYSTEMD_INVOCATION_ID,INVOCATION_ID --since "@$(( $(cut -d. -f1 /var/lib/corpus/since | tr -d @) - 10 ))" | cut -c1-300`))
					jcancel()
				}
				// What the journal holds, as a person would paste it:
				// explain reads journalctl's own formats the same way.
				ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
				for _, format := range []string{"short", "short-iso", "short-precise", "cat", "json"} {
					text := w.sh(t, ctx, host, "journalctl -u sglang --no-pager -o "+format+" --since \"$(cat /var/lib/corpus/since)\"")
					file := filepath.Join(dir, l.Name+"."+format)
					if err := os.WriteFile(file, []byte(text+"\n"), 0o644); err != nil {
						t.Fatal(err)
					}
					code, out, errOut := w.bringup(ctx, "explain", "--json", file)
					lines := strings.Split(strings.TrimSpace(out), "\n")
					var sum output.Line
					if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil || code != explainFailed || sum.Cause == "" || len(sum.Evidence) == 0 {
						t.Errorf("%s: explain of journalctl -o %s: exit %d (%v)\n%s", l.Name, format, code, err, errOut)
						continue
					}
					if sum.Cause != x.Cause || sum.FailedIn != x.FailedIn || sum.Evidence[0] != x.Evidence[0] {
						t.Errorf("%s: explain of journalctl -o %s says %s in %s (%q), of the log %s in %s (%q)", l.Name, format,
							sum.Cause, sum.FailedIn, sum.Evidence[0], x.Cause, x.FailedIn, first(x.Evidence))
					}
				}
				cancel()
			}
		}
	}
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}
