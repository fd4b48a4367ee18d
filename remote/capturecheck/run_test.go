package capturecheck

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote"
)

// fakeRunner answers each command with the output a real GPU gave.
type fakeRunner struct {
	t      *testing.T
	byMode map[string]remote.CheckOutput
	err    error
}

func (f fakeRunner) RunCheck(_ context.Context, command string, env []string, deadline time.Duration) (remote.CheckOutput, error) {
	if deadline != time.Minute {
		f.t.Errorf("deadline %s, want 1m", deadline)
	}
	for mode, out := range f.byMode {
		if strings.HasSuffix(command, "'"+mode+"'") && strings.Contains(strings.Join(env, " "), "KDTREE_MODE="+mode) {
			return out, f.err
		}
	}
	f.t.Errorf("unexpected check %q with %q", command, env)
	return remote.CheckOutput{}, f.err
}

func TestRun(t *testing.T) {
	cat := kernels.DefaultCatalog()
	cat.Kernels[0].Check = "python3 -m kdtree_ext.capture_check --mode {mode}"
	want := func(host, mode string) remote.CheckWant {
		cmd, _ := cat.Kernels[0].CheckCommand(mode)
		return remote.CheckWant{Host: host, Kernel: "kdtree-verify", Mode: mode, Command: cmd, Env: []string{"KDTREE_MODE=" + mode}}
	}
	fromGPU := fakeRunner{t: t, byMode: map[string]remote.CheckOutput{
		"validate": {Output: readCheck(t, "validate"), Exit: 1, Took: 7 * time.Second},
		"on":       {Output: readCheck(t, "on"), Took: 6 * time.Second},
	}}
	runners := map[string]remote.CheckRunner{
		"gpu1": fromGPU, "gpu2": fromGPU,
		"gpu4": fakeRunner{t: t, byMode: map[string]remote.CheckOutput{"on": {Took: time.Second}}, err: errors.New("ssh: connection refused")},
	}
	wants := []remote.CheckWant{want("gpu1", "validate"), want("gpu2", "on"), want("gpu3", "on"), want("gpu4", "on")}
	ev := Run(context.Background(), cat, wants, func(h string) (remote.CheckRunner, bool) {
		r, ok := runners[h]
		return r, ok
	}, time.Minute)
	tests := []struct {
		host          string
		safe, skipped bool
		detail        string
	}{
		{"gpu1", false, false, "graph-capture-host-sync: torch.AcceleratorError: CUDA error: operation not permitted when stream is capturing"},
		{"gpu2", true, false, "capture-check: PASS mode=on"},
		{"gpu3", false, true, "the check could not run: this host's connection runs no commands"},
		{"gpu4", false, true, "the check could not run: ssh: connection refused"},
	}
	for _, tt := range tests {
		got := ev[remote.HostKernel{Host: tt.host, Kernel: "kdtree-verify"}]
		if len(got) != 1 || got[0].Source != kernels.SourceCheck || got[0].Safe != tt.safe || got[0].Skipped != tt.skipped || !strings.HasPrefix(got[0].Detail, tt.detail) {
			t.Errorf("%s: evidence %+v, want safe=%v skipped=%v %q", tt.host, got, tt.safe, tt.skipped, tt.detail)
		}
	}
	if got := ev[remote.HostKernel{Host: "gpu1", Kernel: "kdtree-verify"}]; len(got) == 1 && got[0].Took != 7*time.Second {
		t.Errorf("gpu1's check took %s, want the runner's 7s", got[0].Took)
	}
}
