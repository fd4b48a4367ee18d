package ui

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote"
)

// checkSource is a fake source whose hosts run the kernel's check: every
// check gives the evidence of its mode in byMode.
type checkSource struct {
	*fakeSource
	byMode map[string]kernels.Evidence
	asked  []remote.CheckWant
}

func (c *checkSource) Capabilities() remote.Capabilities {
	caps := c.fakeSource.Capabilities()
	caps.CaptureCheck = func(_ context.Context, wants []remote.CheckWant) remote.SafetyEvidence {
		c.asked = append(c.asked, wants...)
		ev := remote.SafetyEvidence{}
		for _, w := range wants {
			ev[remote.HostKernel{Host: w.Host, Kernel: w.Kernel}] = []kernels.Evidence{c.byMode[w.Mode]}
		}
		return ev
	}
	return caps
}

// realCheckLine is the line PyTorch printed when the reference check
// captured validate on an H100 (kernels/capturecheck/testdata).
func realCheckLine(t *testing.T) string {
	b, err := os.ReadFile(filepath.Join("..", "kernels", "capturecheck", "testdata", "capture-validate.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "torch.AcceleratorError: CUDA error: operation not permitted when stream is capturing") {
			return l
		}
	}
	t.Fatal("no capture error in the real output")
	return ""
}

func newCheckModel(t *testing.T, byMode map[string]kernels.Evidence) (*Model, *checkSource) {
	cat := kernels.DefaultCatalog()
	cat.Kernels[0].Check = "python3 -m kdtree_ext.capture_check --mode {mode}"
	src := &checkSource{fakeSource: newFake(), byMode: byMode}
	m := New(src, Options{Title: "t", Kernels: cat, Now: func() time.Time { return now }, NoColor: true})
	m.Update(tea.WindowSizeMsg{Width: 140, Height: 40})
	m.Update(batchMsg(fleetFixture()))
	return m, src
}

// TestRestartKeyRunsTheCheck: r on gpu1 (kdtree-verify=on, declared
// capture-safe) asks first, runs the check in a command of its own, and
// turns into the preflight refusal when the check fails.
func TestRestartKeyRunsTheCheck(t *testing.T) {
	line := realCheckLine(t)
	failed := kernels.Evidence{Source: kernels.SourceCheck, Took: 7 * time.Second, Detail: "graph-capture-host-sync: " + line}
	m, src := newCheckModel(t, map[string]kernels.Evidence{"on": failed})
	cmd := press(m, "r")
	if m.dialog == nil || m.dialog.kind != dlgConfirm || cmd == nil {
		t.Fatalf("r on gpu1: dialog %+v, command %v", m.dialog, cmd)
	}
	if out := render(m); !strings.Contains(out, "Capture check of kdtree-verify=on running on gpu1") {
		t.Errorf("the confirmation does not say the check runs:\n%s", out)
	}
	press(m, "y")
	if len(src.calls) != 0 || !strings.Contains(m.status, "waiting for the capture check") {
		t.Fatalf("y while the check runs: calls %v, status %q", src.calls, m.status)
	}
	m.Update(cmd())
	if len(src.asked) != 1 || src.asked[0].Host != "gpu1" || src.asked[0].Mode != "on" {
		t.Errorf("checks asked: %+v", src.asked)
	}
	if m.dialog == nil || m.dialog.kind != dlgPreflight {
		t.Fatalf("a failed check did not refuse the restart: %+v", m.dialog)
	}
	out := strings.Join(strings.Fields(render(m)), " ")
	for _, want := range []string{"preflight refused", "refused by check", "says not: graph-capture-host-sync: torch.AcceleratorError", "set kdtree-verify to off, then restart"} {
		if !strings.Contains(out, want) {
			t.Errorf("preflight dialog lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "set kdtree-verify to on") {
		t.Errorf("the refused mode is offered as a safe one:\n%s", out)
	}
}

func TestRestartKeyCheckPassesOrIsSkipped(t *testing.T) {
	passed := kernels.Evidence{Source: kernels.SourceCheck, Safe: true, Took: 600 * time.Millisecond, Detail: "capture-check: PASS mode=on"}
	m, src := newCheckModel(t, map[string]kernels.Evidence{"on": passed})
	cmd := press(m, "r")
	m.Update(cmd())
	if out := strings.Join(strings.Fields(render(m)), " "); !strings.Contains(out, "gpu1: capture check of kdtree-verify=on passed in 600ms") {
		t.Errorf("the confirmation does not say the check passed:\n%s", out)
	}
	drive(t, m, press(m, "y"))
	if len(src.calls) != 1 || src.calls[0].a.Kind != remote.ActRestart || src.calls[0].a.SkipCheck {
		t.Fatalf("calls after a passed check: %+v", src.calls)
	}

	m, src = newCheckModel(t, map[string]kernels.Evidence{"on": passed})
	cmd = press(m, "r")
	press(m, "s")
	if out := render(m); !strings.Contains(out, "capture check skipped (recorded)") {
		t.Errorf("s did not skip the check:\n%s", out)
	}
	drive(t, m, press(m, "y"))
	m.Update(cmd()) // the check's late answer changes nothing
	if len(src.calls) != 1 || !src.calls[0].a.SkipCheck || src.calls[0].a.String() != "restart (capture check skipped)" {
		t.Fatalf("calls after a skipped check: %+v", src.calls)
	}
}

// TestModeKeyShowsTheCheck: choosing a mode runs its check too; the
// confirmation says a restart in it will be refused, and the mode change
// itself does not wait.
func TestModeKeyShowsTheCheck(t *testing.T) {
	failed := kernels.Evidence{Source: kernels.SourceCheck, Took: 7 * time.Second, Detail: "graph-capture-host-sync: " + realCheckLine(t)}
	m, _ := newCheckModel(t, map[string]kernels.Evidence{"validate": failed})
	press(m, "m")
	if m.dialog == nil || m.dialog.kind != dlgMode {
		t.Fatalf("m did not open the mode chooser: %+v", m.dialog)
	}
	var cmd tea.Cmd
	for i, c := range m.dialog.choices {
		if c.value == "validate" {
			cmd = press(m, string(rune('1'+i)))
		}
	}
	if m.dialog == nil || m.dialog.kind != dlgConfirm || cmd == nil {
		t.Fatalf("choosing validate: dialog %+v", m.dialog)
	}
	m.Update(cmd())
	out := strings.Join(strings.Fields(render(m)), " ")
	if !strings.Contains(out, "capture check of kdtree-verify=validate failed in 7s") || !strings.Contains(out, "refused by declared, check") {
		t.Errorf("the mode confirmation lacks the check's verdict:\n%s", out)
	}
}

// lintSource is a fake source whose fleet lints kernel files (no check
// command in the catalog): every want gets the lint's evidence of its
// mode in byMode.
type lintSource struct{ *checkSource }

func (l *lintSource) Capabilities() remote.Capabilities {
	caps := l.checkSource.Capabilities()
	caps.CaptureWeighs = func(remote.CheckWant) bool { return true }
	return caps
}

// TestRestartKeyRunsTheLint: with no check command, r still weighs the
// lint of the kernel files the unit loads, in the same background
// command; a sync it finds in a mode declared safe refuses the restart:
// refused by lint, with file:line and the function.
func TestRestartKeyRunsTheLint(t *testing.T) {
	found := kernels.Evidence{Source: kernels.SourceLint, Took: 3 * time.Millisecond,
		Detail: "kdtree_verify/marshal.py:13 offsets.max().item() in pack (read from gpu1:/opt/kdtree/site)"}
	cat := kernels.DefaultCatalog()
	src := &lintSource{&checkSource{fakeSource: newFake(), byMode: map[string]kernels.Evidence{"on": found}}}
	m := New(src, Options{Title: "t", Kernels: cat, Now: func() time.Time { return now }, NoColor: true})
	m.Update(tea.WindowSizeMsg{Width: 140, Height: 40})
	m.Update(batchMsg(fleetFixture()))
	cmd := press(m, "r")
	if cmd == nil || !strings.Contains(render(m), "Lint of the kernel files of kdtree-verify=on running on gpu1") {
		t.Fatalf("r did not start the lint:\n%s", render(m))
	}
	m.Update(cmd())
	if len(src.asked) != 1 || src.asked[0].Command != "" {
		t.Errorf("asked: %+v", src.asked)
	}
	if m.dialog == nil || m.dialog.kind != dlgPreflight {
		t.Fatalf("the lint's finding did not refuse the restart: %+v", m.dialog)
	}
	out := strings.Join(strings.Fields(render(m)), " ")
	for _, want := range []string{"refused by lint: kdtree-verify=on is declared capture-safe", "kdtree_verify/marshal.py:13 offsets.max().item() in pack"} {
		if !strings.Contains(out, want) {
			t.Errorf("preflight dialog lacks %q:\n%s", want, out)
		}
	}
}

// TestRolloutFormRunsTheCheck: the rollout form's enter weighs the
// target mode on every host in the background, the same way r does; the
// confirmation shows the verdict and its duration before the rollout
// starts, and waits for it; s skips it and the rollout's restarts say so.
func TestRolloutFormRunsTheCheck(t *testing.T) {
	passed := kernels.Evidence{Source: kernels.SourceCheck, Safe: true, Took: 600 * time.Millisecond, Detail: "capture-check: PASS mode=on"}
	m, src := newCheckModel(t, map[string]kernels.Evidence{"on": passed})
	cmd := press(m, "R", "l", "l", "l", "enter") // mode on, all hosts
	if m.dialog == nil || m.dialog.rollout == nil || !m.dialog.rollout.confirming || cmd == nil {
		t.Fatalf("the rollout form's enter: dialog %+v, command %v", m.dialog, cmd)
	}
	if out := render(m); !strings.Contains(out, "Capture check of kdtree-verify=on running on gpu1 and 3 more") {
		t.Errorf("the confirmation does not say the check runs:\n%s", out)
	}
	press(m, "y")
	if m.rollout != nil || !strings.Contains(m.status, "waiting for the capture check") {
		t.Fatalf("y while the check runs: rollout %v, status %q", m.rollout, m.status)
	}
	m.Update(cmd())
	if len(src.asked) != 4 {
		t.Errorf("checks asked: %+v", src.asked)
	}
	out := strings.Join(strings.Fields(render(m)), " ")
	for _, want := range []string{"Start the rollout?", "gpu1: capture check of kdtree-verify=on passed in 600ms", "gpu4: capture check of"} {
		if !strings.Contains(out, want) {
			t.Errorf("the confirmation lacks %q:\n%s", want, out)
		}
	}
	drive(t, m, press(m, "y"))
	if m.rollout == nil || m.rollout.r.Plan().Mode.Mode != "on" || m.rollout.r.Plan().SkipCheck {
		t.Fatalf("the rollout after a passed check: %+v", m.rollout)
	}

	m, _ = newCheckModel(t, map[string]kernels.Evidence{"on": passed})
	cmd = press(m, "R", "l", "l", "l", "enter")
	press(m, "s")
	if out := render(m); !strings.Contains(out, "capture check skipped (recorded)") {
		t.Errorf("s did not skip the check:\n%s", out)
	}
	drive(t, m, press(m, "y"))
	m.Update(cmd()) // the late answer changes nothing
	if m.rollout == nil || !m.rollout.r.Plan().SkipCheck {
		t.Fatalf("the rollout after a skipped check does not record it: %+v", m.rollout)
	}
}

// TestRolloutFormCheckRefuses: a failed check turns the rollout's
// confirmation into its preflight dialog (who refused, PyTorch's line);
// the refused mode is no longer offered, and picking the one left (off,
// nothing to check) starts the rollout in it.
func TestRolloutFormCheckRefuses(t *testing.T) {
	failed := kernels.Evidence{Source: kernels.SourceCheck, Took: 7 * time.Second, Detail: "graph-capture-host-sync: " + realCheckLine(t)}
	m, src := newCheckModel(t, map[string]kernels.Evidence{"on": failed})
	cmd := press(m, "R", "l", "l", "l", "enter")
	m.Update(cmd())
	if m.dialog == nil || m.dialog.kind != dlgPreflight || m.dialog.rollout == nil {
		t.Fatalf("a failed check did not refuse the rollout: %+v", m.dialog)
	}
	out := strings.Join(strings.Fields(render(m)), " ")
	for _, want := range []string{"Rollout to 4 hosts: preflight refused", "refused by check", "(and 3 more hosts)"} {
		if !strings.Contains(out, want) {
			t.Errorf("the rollout's preflight dialog lacks %q:\n%s", want, out)
		}
	}
	if len(m.dialog.choices) != 1 || m.dialog.choices[0].value != "off" {
		t.Fatalf("choices after on was refused: %+v", m.dialog.choices)
	}
	drive(t, m, press(m, "enter"))
	if m.rollout == nil || m.rollout.r.Plan().Mode.Mode != "off" || len(src.calls) == 0 {
		t.Fatalf("picking off did not start the rollout in it: %+v, calls %+v", m.rollout, src.calls)
	}
}

// TestPreflightChoiceRunsTheCheck: the preflight dialog's "set X to on,
// then restart" weighs on first: its confirmation says the check runs,
// waits for it, shows its verdict and duration, and only then sets the
// mode and restarts; a failed check refuses again, on no longer offered.
func TestPreflightChoiceRunsTheCheck(t *testing.T) {
	passed := kernels.Evidence{Source: kernels.SourceCheck, Safe: true, Took: 600 * time.Millisecond, Detail: "capture-check: PASS mode=on"}
	m, src := newCheckModel(t, map[string]kernels.Evidence{"on": passed})
	press(m, "j", "j", "r") // gpu3 runs validate, declared unsafe
	if m.dialog == nil || m.dialog.kind != dlgPreflight || m.dialog.choices[0].value != "on" {
		t.Fatalf("r on gpu3: %+v", m.dialog)
	}
	cmd := press(m, "enter") // set kdtree-verify to on, then restart
	if m.dialog == nil || m.dialog.kind != dlgConfirm || cmd == nil {
		t.Fatalf("choosing on: dialog %+v", m.dialog)
	}
	out := render(m)
	for _, want := range []string{"Set kdtree-verify to on on gpu3, then restart sglang.service?", "Capture check of kdtree-verify=on running on gpu3"} {
		if !strings.Contains(out, want) {
			t.Errorf("the confirmation lacks %q:\n%s", want, out)
		}
	}
	press(m, "y")
	if len(src.calls) != 0 || !strings.Contains(m.status, "waiting for the capture check") {
		t.Fatalf("y while the check runs: calls %v, status %q", src.calls, m.status)
	}
	m.Update(cmd())
	if out := strings.Join(strings.Fields(render(m)), " "); !strings.Contains(out, "gpu3: capture check of kdtree-verify=on passed in 600ms") {
		t.Errorf("the confirmation does not say the check passed:\n%s", out)
	}
	drive(t, m, press(m, "y"))
	if len(src.calls) != 2 || src.calls[0].a.Kind != remote.ActSetMode || src.calls[0].a.Mode != "on" || src.calls[1].a.Kind != remote.ActRestart || src.calls[1].host != "gpu3" {
		t.Fatalf("calls after the confirmation: %+v", src.calls)
	}

	failed := kernels.Evidence{Source: kernels.SourceCheck, Took: 7 * time.Second, Detail: "graph-capture-host-sync: " + realCheckLine(t)}
	m, src = newCheckModel(t, map[string]kernels.Evidence{"on": failed})
	press(m, "j", "j", "r")
	m.Update(press(m, "enter")())
	if m.dialog == nil || m.dialog.kind != dlgPreflight || len(src.calls) != 0 {
		t.Fatalf("a failed check of on did not refuse: %+v, calls %+v", m.dialog, src.calls)
	}
	if out := strings.Join(strings.Fields(render(m)), " "); !strings.Contains(out, "refused by check") || strings.Contains(out, "set kdtree-verify to on") {
		t.Errorf("the refusal after the check:\n%s", out)
	}
}

// TestRestartKeyCheckOutOfMemory: a check that could not run for want of
// GPU memory (the serving engine holds it) does not refuse: the
// confirmation says it did not run and why, with PyTorch's line, and y
// restarts.
func TestRestartKeyCheckOutOfMemory(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "remote", "startup", "testdata", "gpu", "oom.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var line string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "torch.OutOfMemoryError: ") {
			line = l
		}
	}
	oom := kernels.Evidence{Source: kernels.SourceCheck, Skipped: true, Took: 2 * time.Second,
		Detail: "the check could not run: the GPU ran out of memory (an engine serving on it holds its memory; check again while the unit is stopped, or --skip-check): gpu-oom: " + line}
	m, src := newCheckModel(t, map[string]kernels.Evidence{"on": oom})
	cmd := press(m, "r")
	m.Update(cmd())
	if m.dialog == nil || m.dialog.kind != dlgConfirm {
		t.Fatalf("a check out of GPU memory refused the restart: %+v", m.dialog)
	}
	out := strings.Join(strings.Fields(render(m)), " ")
	for _, want := range []string{"gpu1: capture check of kdtree-verify=on did not run in 2s", "the GPU ran out of memory", "torch.OutOfMemoryError: CUDA out of memory"} {
		if !strings.Contains(out, want) {
			t.Errorf("the confirmation lacks %q:\n%s", want, out)
		}
	}
	drive(t, m, press(m, "y"))
	if len(src.calls) != 1 || src.calls[0].a.Kind != remote.ActRestart {
		t.Fatalf("calls: %+v", src.calls)
	}
}
