package main

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/cmd/bringup/cli"
	"github.com/bringup-dev/bringup/remote/testkit/e2e"
)

// hasControl reports a byte a terminal would act on: C0 (but newline),
// DEL, or ESC starting a sequence.
func hasControl(s string) bool {
	for _, r := range s {
		if r < 0x20 && r != '\n' || r == 0x7f || r >= 0x80 && r < 0xa0 {
			return true
		}
	}
	return false
}

// interrupted is a context ended as ctrl-c ends the commands' context.
func interrupted(t *testing.T) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(t.Context())
	return ctx, func() { cancel(cli.Interrupted{Signal: os.Interrupt}) }
}

// TestExplainStopsOnInterrupt: a log that never ends (a pipe nobody
// closes) and a rule file that is a FIFO with no writer both give way to
// ctrl-c: explain exits 130 at once instead of blocking for ever.
func TestExplainStopsOnInterrupt(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "rules.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"endless stdin", []string{"explain", "-"}},
		{"rules FIFO", []string{"explain", "--rules", fifo, "-"}},
		{"config FIFO", []string{"status", "--config", fifo}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pr, pw := io.Pipe()
			defer pw.Close()
			go func() { _, _ = pw.Write([]byte("a line that is not the end\n")) }()
			var out, errOut syncBuffer
			e := testEnv(&out, &errOut)
			e.stdin = pr
			ctx, interrupt := interrupted(t)
			done := make(chan int, 1)
			go func() { done <- run(ctx, e, tc.args) }()
			time.Sleep(200 * time.Millisecond)
			interrupt()
			select {
			case code := <-done:
				if code != exitInterrupted {
					t.Fatalf("exit %d (stderr %q), want %d", code, errOut.String(), exitInterrupted)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("still reading 5 s after ctrl-c")
			}
		})
	}
}

// TestRulesFileSizeCapped: `--rules /dev/zero` is an error naming the
// file, not an exhausted memory.
func TestRulesFileSizeCapped(t *testing.T) {
	var out, errOut syncBuffer
	e := testEnv(&out, &errOut)
	e.stdin = strings.NewReader("INFO 08-05 09:09:26 hello\n")
	code := run(t.Context(), e, []string{"explain", "--rules", "/dev/zero", "-"})
	if code != exitUsage || !strings.Contains(errOut.String(), "/dev/zero: larger than") {
		t.Fatalf("exit %d, stderr %q; want %d and the file named as too large", code, errOut.String(), exitUsage)
	}
}

// TestExplainShowsNoStrangersControls: a file name and a rule pack's
// texts with terminal controls (a clipboard write, a screen clear, a
// title) come out of explain as visible text, in its heading, its
// verdict and its errors.
func TestExplainShowsNoStrangersControls(t *testing.T) {
	dir := t.TempDir()
	evil := "\x1b]0;owned\x07log\x1b[2J.txt"
	logPath := filepath.Join(dir, evil)
	if err := os.WriteFile(logPath, []byte("[2026-01-02 03:04:05 TP0] Load weight begin. avail mem=70.00 GB\n[2026-01-02 03:04:09 TP0] KDTREE_EVIL marker\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pack := filepath.Join(dir, "pack.yaml")
	if err := os.WriteFile(pack, []byte(`engine: "evil\e[2J"
failures:
  - keywords: [KDTREE_EVIL]
    cause: "evil-cause\e]52;c;aGVsbG8=\a"
    summary: "clipboard \e]52;c;aGVsbG8=\a written"
    hint: "clear \e[2J the screen"
`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"explain", "--rules", pack, logPath},
		{"explain", "--json", "--rules", pack, logPath},
		{"explain", filepath.Join(dir, "missing"+evil)},
	} {
		var out, errOut syncBuffer
		e := testEnv(&out, &errOut)
		code := run(t.Context(), e, args)
		if hasControl(out.String()) || hasControl(errOut.String()) {
			t.Errorf("%q: exit %d, a control reached the terminal:\nstdout %q\nstderr %q", args[len(args)-1], code, out.String(), errOut.String())
		}
		if args[1] == "--rules" && (code != explainFailed || !strings.Contains(out.String(), "clipboard")) {
			t.Errorf("exit %d, stdout %q: want the pack's failure, sanitised", code, out.String())
		}
	}
}

// TestExplainEndlessInputBinary runs `yes | bringup explain -` for 60 s:
// its memory stays flat (sampled every 5 s) and ctrl-c then exits 130.
// explain once held every line: 4 GB went in 3.6 s and the runtime's own
// "out of memory" exit 2 read as the undecided verdict.
func TestExplainEndlessInputBinary(t *testing.T) {
	e2e.Require(t) // builds and runs the binary for a minute
	bin := buildBringup(t)
	yes := exec.CommandContext(t.Context(), "yes", "INFO 08-05 09:09:26 [loader.py:12] a line of a log that goes on")
	cmd := exec.CommandContext(t.Context(), bin, "explain", "-")
	pipe, err := yes.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdin = pipe
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := yes.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = yes.Process.Kill(); _ = yes.Wait() }()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var samples []int
	for range 12 {
		time.Sleep(5 * time.Second)
		samples = append(samples, rssKiB(t, cmd.Process.Pid))
	}
	t.Logf("RSS every 5 s (KiB): %v", samples)
	// Flat: past the warm-up, no sample above the first by more than a
	// quarter (the held untimed lines, the runtime's own growth), and far
	// from the gigabytes every line held would take.
	base := samples[1]
	for i, s := range samples[2:] {
		if s > base+base/4 || s > 256<<10 {
			t.Fatalf("RSS %d KiB at %d s, %d KiB at 10 s: it grows with the input (%v)", s, 5*(i+3), base, samples)
		}
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	code := cmd.ProcessState.ExitCode()
	if code != exitInterrupted {
		t.Fatalf("after ctrl-c: exit %d (%v), stderr %q; want %d", code, err, stderr.String(), exitInterrupted)
	}
}

// rssKiB reads a process's resident set from /proc.
func rssKiB(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no VmRSS for %d", pid)
	return 0
}

// FuzzExplain runs explain's whole path, text and JSON, on arbitrary
// bytes: it never panics, never hangs, and nothing it prints carries a
// control a terminal would act on.
func FuzzExplain(f *testing.F) {
	f.Add([]byte("[2026-01-02 03:04:05 TP0] Load weight begin. avail mem=70.00 GB\n"))
	f.Add([]byte("Jan 28 10:40:03 gpu1 python[812]: \x1b]52;c;aGk=\x07torch.OutOfMemoryError: CUDA out of memory\n"))
	f.Add([]byte(`{"MESSAGE":"\u001b[2Jboom","__REALTIME_TIMESTAMP":"1700000000000000"}` + "\n"))
	f.Add([]byte("\xff\xfe\x00\r\n\x9b31m"))
	f.Fuzz(func(t *testing.T, in []byte) {
		for _, args := range [][]string{{"explain", "-"}, {"explain", "--json", "-"}} {
			var out, errOut syncBuffer
			e := testEnv(&out, &errOut)
			e.stdin = strings.NewReader(string(in))
			code := run(t.Context(), e, args)
			if code != explainServed && code != explainFailed && code != explainUndecided && code != exitUsage {
				t.Fatalf("%q: exit %d", args, code)
			}
			if hasControl(out.String()) || hasControl(errOut.String()) {
				t.Fatalf("%q: a control reached the terminal:\nstdout %q\nstderr %q", args, out.String(), errOut.String())
			}
		}
	})
}
