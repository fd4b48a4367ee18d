package vllm

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/sim/sglang"
)

var at = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

// kernel is a kernel extension in mode, capture-safe unless validate.
func kernel(mode string) sglang.Kernel {
	return sglang.Kernel{Name: "kdtree-verify", Mode: mode, CaptureSafe: mode != "validate", Path: "/opt/kdtree/site", Hash: strings.Repeat("ab", 32)}
}

// texts renders a startup's lines at the test's moment.
func texts(st *Startup) string {
	var b strings.Builder
	for _, l := range st.Lines {
		if l.Text != nil {
			b.WriteString(l.Text(at) + "\n")
		}
	}
	return b.String()
}

// TestKernelLineBothEngines: the kernel's "sitecustomize loaded" line,
// from which the fleet learns the running build's hash, says the same
// under both engines, at the same moment; under vLLM it is bare (printed
// before vLLM's logging exists), so it does not pass for an SGLang line.
func TestKernelLineBothEngines(t *testing.T) {
	s := sglang.New(sglang.Params{Kernel: kernel("on")})
	sAt, sLine := time.Duration(-1), ""
	for _, l := range s.Lines {
		if strings.Contains(l.Text, "sitecustomize loaded") {
			sAt, sLine = l.At, l.Render(at)
			break
		}
	}
	vAt, vLine := time.Duration(-1), ""
	for _, l := range Play(s, Args{}).Lines {
		if l.Text != nil && strings.Contains(l.Text(at), "sitecustomize loaded") {
			vAt, vLine = l.At, l.Text(at)
			break
		}
	}
	sl, sok := remote.ParseLoadedKernel(sLine)
	vl, vok := remote.ParseLoadedKernel(vLine)
	if !sok || !vok || sl != vl || sAt != vAt || vl.Hash != strings.Repeat("ab", 32) || vl.Kernel != "kdtree-verify" {
		t.Errorf("SGLang %v %q (%+v)\nvLLM   %v %q (%+v)", sAt, sLine, sl, vAt, vLine, vl)
	}
	if !strings.HasPrefix(vLine, "kdtree-verify: ") || !strings.HasSuffix(sLine, vLine) {
		t.Errorf("vLLM's kernel line %q is not SGLang's %q without the logger prefix", vLine, sLine)
	}
}

// TestPlayEnds: every startup's lines come in time order, and it ends as
// the timeline's failure makes vLLM end: exit 1 for the failures an
// engine reports, running on for a hang and for the NCCL timeout (the
// engine core waits on its dead worker for ever); the port is bound early,
// and listened on only by a startup that serves.
func TestPlayEnds(t *testing.T) {
	tests := []struct {
		name    string
		p       sglang.Params
		exit    bool
		listens bool
		want    []string
	}{
		{name: "serves", p: sglang.Params{Kernel: kernel("on")}, listens: true,
			want: []string{"(APIServer pid=4242) INFO:     Application startup complete.", "Graph capturing finished in 80 secs"}},
		{name: "enforce-eager in validate serves without capture", p: sglang.Params{Kernel: kernel("validate"), DisableCUDAGraph: true}, listens: true,
			want: []string{"'enforce_eager': True", "Application startup complete."}},
		{name: "validate fails at capture", p: sglang.Params{Kernel: kernel("validate")}, exit: true,
			want: []string{"WorkerProc hit an exception.", "operation not permitted when stream is capturing", "Engine core initialization failed."}},
		{name: "oom", p: sglang.Params{Failure: sglang.FailOOM}, exit: true, want: []string{"WorkerProc failed to start.", "torch.OutOfMemoryError: CUDA out of memory."}},
		{name: "crashloop", p: sglang.Params{Failure: sglang.FailCrashLoop}, exit: true, want: []string{"RuntimeError: NCCL error: unhandled system error"}},
		{name: "port in use fails the early bind", p: sglang.Params{Failure: sglang.FailPort}, exit: true,
			want: []string{"in create_server_socket", "(APIServer pid=4242) OSError: [Errno 98] Address already in use"}},
		{name: "nccl timeout stays up", p: sglang.Params{Failure: sglang.FailNCCL}, want: []string{"Worker proc VllmWorker-3 died unexpectedly"}},
		{name: "hang stays up", p: sglang.Params{Failure: sglang.FailHang}, want: []string{"Maximum concurrency for 163,840 tokens per request"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := Play(sglang.New(tc.p), Args{ModelTag: "/models/DeepSeek-V3", Set: map[string]bool{"tensor-parallel-size": true}})
			if !slices.IsSortedFunc(st.Lines, func(a, b Line) int { return int(a.At - b.At) }) {
				t.Error("lines out of time order")
			}
			if got := st.Exit != sglang.Never; got != tc.exit || (tc.exit && st.ExitCode != 1) {
				t.Errorf("exit %v (code %d), want exit %v", st.Exit, st.ExitCode, tc.exit)
			}
			var bind, listen int
			for _, l := range st.Lines {
				if l.Bind {
					bind++
				}
				if l.Listen {
					listen++
				}
			}
			if bind != 1 || (listen == 1) != tc.listens {
				t.Errorf("%d binds, %d listens; want 1 bind, listens %v", bind, listen, tc.listens)
			}
			log := texts(st)
			for _, w := range tc.want {
				if !strings.Contains(log, w) {
					t.Errorf("log lacks %q", w)
				}
			}
		})
	}
}
