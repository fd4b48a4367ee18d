package ui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/history"
	"github.com/bringup-dev/bringup/remote/startup"
)

// fakeSource is a Source that records the actions asked of it.
type fakeSource struct {
	ch      chan remote.Batch
	ro      bool
	calls   []doCall
	cancels []doCall          // Cancel's host and id (the id in a.Requests)
	local   map[string]string // LocalHashes
	views   []string          // what View was told, in order
}

type doCall struct {
	host string
	a    remote.Action
}

func newFake() *fakeSource { return &fakeSource{ch: make(chan remote.Batch, 8)} }

func (f *fakeSource) Updates() <-chan remote.Batch { return f.ch }
func (f *fakeSource) ReadOnly() bool               { return f.ro }
func (f *fakeSource) LocalHashes() map[string]string {
	return f.local
}
func (f *fakeSource) View(host string) { f.views = append(f.views, host) }
func (f *fakeSource) Do(host string, a remote.Action) (int, error) {
	if f.ro && a.Kind.Changes() {
		return 0, remote.ErrReadOnly
	}
	f.calls = append(f.calls, doCall{host, a})
	return len(f.calls), nil
}

// Capabilities offers the local hashes, the open view and Cancel.
func (f *fakeSource) Capabilities() remote.Capabilities {
	return remote.Capabilities{LocalHashes: f.LocalHashes, View: f.View, Cancel: f.Cancel}
}

// Cancel records an action stopped (the bench overlay's esc).
func (f *fakeSource) Cancel(host string, id int) error {
	f.cancels = append(f.cancels, doCall{host, remote.Action{Requests: id}})
	return nil
}

// base and now are the fixed host times of the fixtures.
var (
	base = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	now  = base.Add(12*time.Minute + 34*time.Second)
)

func at(d string) time.Time {
	x, err := time.ParseDuration(d)
	if err != nil {
		panic(err)
	}
	return base.Add(x)
}

func spans(phases ...any) []startup.Span {
	var out []startup.Span
	for i := 0; i < len(phases); i += 2 {
		sp := startup.Span{Phase: phases[i].(startup.Phase), Start: at(phases[i+1].(string))}
		if len(out) > 0 {
			out[len(out)-1].End = sp.Start
		}
		out = append(out, sp)
	}
	return out
}

func gpuSamples(levels ...float64) []event.GPU {
	out := make([]event.GPU, len(levels))
	for i, l := range levels {
		devs := make([]event.GPUDevice, 8)
		for d := range devs {
			devs[d] = event.GPUDevice{Index: d, MemTotalMiB: 81559, MemUsedMiB: int(l * 81559), UtilPct: int(l * 40)}
		}
		out[i] = event.GPU{Devices: devs}
	}
	return out
}

func modes(cat kernels.Catalog, mode string) []kernels.ActiveMode {
	return cat.ModesIn([]string{"KDTREE_MODE=" + mode})
}

// fleetFixture is the seed story mid-startup: gpu1 serving, gpu2 loading
// weights, gpu3 failed in graph capture under validate, gpu4 capturing.
func fleetFixture() remote.Batch {
	cat := kernels.DefaultCatalog()
	unit := "sglang.service"
	active := event.Unit{Name: unit, ActiveState: "active", SubState: "running"}
	failed := event.Unit{Name: unit, ActiveState: "failed", SubState: "failed", Result: "exit-code"}
	up := event.Conn{State: event.ConnUp}
	hosts := []remote.HostState{
		{Name: "gpu1", Unit: unit, UnitState: active, Conn: up, Modes: modes(cat, "on"), GPU: gpuSamples(0.1, 0.5, 0.8, 0.9, 0.9, 0.91),
			Startup: startup.Startup{Phase: startup.Serving, PhaseSince: at("9m10s"), StartedAt: at("5s"), Engine: "sglang",
				Spans: spans(startup.Starting, "5s", startup.Init, "12s", startup.Weights, "50s", startup.KVCache, "6m40s",
					startup.GraphCapture, "7m02s", startup.HTTP, "8m30s", startup.Warmup, "8m41s", startup.Serving, "9m10s")}},
		{Name: "gpu2", Unit: unit, UnitState: active, Conn: up, Modes: modes(cat, "on"), GPU: gpuSamples(0.05, 0.2, 0.3, 0.4),
			Startup: startup.Startup{Phase: startup.Weights, PhaseSince: at("4m20s"), StartedAt: at("3m30s"), Engine: "sglang",
				Progress: startup.Progress{Done: 41, Total: 65, Label: "shards"},
				Spans:    spans(startup.Starting, "3m30s", startup.Init, "3m41s", startup.Weights, "4m20s")}},
		{Name: "gpu3", Unit: unit, UnitState: failed, Conn: up, Modes: modes(cat, "validate"), GPU: gpuSamples(0.1, 0.6, 0.85, 0.88, 0.02),
			Startup: startup.Startup{Phase: startup.Failed, PhaseSince: at("8m02s"), StartedAt: at("8s"), Engine: "sglang",
				Spans: spans(startup.Starting, "8s", startup.Init, "15s", startup.Weights, "52s", startup.KVCache, "7m16s",
					startup.GraphCapture, "7m40s", startup.Failed, "8m02s"),
				Diag: &startup.Diagnosis{
					Cause:   "graph-capture-host-sync",
					Summary: "CUDA graph capture failed: kdtree-verify=validate syncs with the host",
					Hint:    "switch kdtree-verify to a capture-safe mode (on, off), or start with --disable-cuda-graph",
					Phase:   startup.GraphCapture, Time: at("7m58s"), KernelMode: "kdtree-verify=validate",
					Fix: &startup.Fix{Kernel: "kdtree-verify", Mode: "on"},
					Evidence: []string{
						"RuntimeError: CUDA error: operation not permitted when stream is capturing",
						"  File \"/opt/kdtree/site/kdtree_verify/validate.py\", line 88, in check",
						"    if not torch.allclose(out.cpu(), ref.cpu()):",
						"Capture cuda graph failed: operation failed due to a previous error during capture",
					},
				}}},
		{Name: "gpu4", Unit: unit, UnitState: active, Conn: up, Modes: modes(cat, "on"),
			Startup: startup.Startup{Phase: startup.GraphCapture, PhaseSince: at("11m50s"), StartedAt: at("2m"), Engine: "sglang",
				Progress: startup.Progress{Done: 20, Total: 36, Label: "bs=64"},
				Spans: spans(startup.Starting, "2m", startup.Init, "2m09s", startup.Weights, "2m51s", startup.KVCache, "11m20s",
					startup.GraphCapture, "11m50s")}},
	}
	// Each unit's Environment carries its mode, its ExecStart leaves CUDA
	// graphs on, and each invocation started in the mode on disk.
	for i := range hosts {
		h := &hosts[i]
		h.UnitState.Environment = []string{"PYTHONPATH=/opt/kdtree/site", "KDTREE_MODE=" + h.Modes[0].Mode}
		h.UnitState.ExecStart = execStart
		h.Startup.Modes = h.Modes
	}
	var evs []event.Event
	journal := func(host, d string, prio int, msg string) {
		evs = append(evs, event.Event{Host: host, Kind: event.KindJournal, Time: at(d),
			Journal: &event.Journal{Priority: prio, Message: msg}})
	}
	for i := 0; i < 40; i++ {
		journal("gpu3", fmt.Sprintf("%ds", 52+i*10), 6,
			fmt.Sprintf("[2026-11-30 10:0%d:%02d TP%d] Load weight begin. avail mem=%.2f GB", (52+i*10)/60, (52+i*10)%60, i%8, 78.5-float64(i)/10))
	}
	evs = append(evs, event.Event{Host: "gpu3", Kind: event.KindGap, Time: at("7m20s"),
		Gap: &event.Gap{Reason: "suppressed", Count: 112, Message: "journald rate limit"}})
	journal("gpu3", "7m40s", 6, "[2026-11-30 10:07:40 TP0] Capture cuda graph begin. This can take up to several minutes. avail mem=12.31 GB")
	journal("gpu3", "7m58s", 3, "RuntimeError: CUDA error: operation not permitted when stream is capturing")
	journal("gpu3", "7m58s", 3, "  File \"/opt/kdtree/site/kdtree_verify/validate.py\", line 88, in check")
	journal("gpu3", "7m59s", 3, "Capture cuda graph failed: operation failed due to a previous error during capture")
	journal("gpu3", "8m01s", 6, "[2026-11-30 10:08:01] Received sigquit from a child process. It usually means the child failed.")
	journal("gpu3", "8m02s", 4, "sglang.service: Main process exited, code=exited, status=1/FAILURE")
	journal("gpu3", "8m02s", 4, "sglang.service: Failed with result 'exit-code'.")
	journal("gpu2", "4m20s", 6, "[2026-11-30 10:04:20 TP0] Load weight begin. avail mem=78.50 GB")
	journal("gpu2", "12m30s", 6, "Loading safetensors checkpoint shards:  63% Completed | 41/65 [08:10<04:47, 12.0s/it]")
	// History: five earlier runs of the same unit and mode on each host,
	// so the starting hosts have an ETA (computed as the fleet does).
	for i := range hosts {
		hosts[i].Expected = typicalRuns
		if eta, ok := history.ETA(typicalRuns, hosts[i].Startup, now); ok {
			hosts[i].ETA = eta
		}
	}
	return remote.Batch{Hosts: hosts, Events: evs}
}

// execStart is the fixture units' command line: SGLang with CUDA graphs on.
const execStart = "/opt/sglang/bin/python3 -m sglang.launch_server --model-path /models/llama-3-70b --tp 8 --port 30000"

// typicalRuns is what the fixture's history says a startup takes.
var typicalRuns = history.Expectation{Runs: 5, Total: 11*time.Minute + 10*time.Second, WeightMemMiB: 40000,
	Phase: map[startup.Phase]time.Duration{
		startup.Starting: 7 * time.Second, startup.Init: 38 * time.Second, startup.Weights: 9 * time.Minute,
		startup.KVCache: 30 * time.Second, startup.GraphCapture: 80 * time.Second, startup.HTTP: 10 * time.Second,
		startup.Warmup: 25 * time.Second}}

// keyMsg builds a key press the way the terminal would deliver it.
func keyMsg(k string) tea.KeyPressMsg {
	switch k {
	case "enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter}
	case "esc":
		return tea.KeyPressMsg{Code: tea.KeyEscape}
	case "space":
		return tea.KeyPressMsg{Code: tea.KeySpace, Text: " "}
	case "down":
		return tea.KeyPressMsg{Code: tea.KeyDown}
	case "up":
		return tea.KeyPressMsg{Code: tea.KeyUp}
	case "left":
		return tea.KeyPressMsg{Code: tea.KeyLeft}
	case "right":
		return tea.KeyPressMsg{Code: tea.KeyRight}
	case "pgup":
		return tea.KeyPressMsg{Code: tea.KeyPgUp}
	case "ctrl+c":
		return tea.KeyPressMsg{Code: 'c', Mod: tea.ModCtrl}
	case "ctrl+r":
		return tea.KeyPressMsg{Code: 'r', Mod: tea.ModCtrl}
	case "tab":
		return tea.KeyPressMsg{Code: tea.KeyTab}
	case "shift+tab":
		return tea.KeyPressMsg{Code: tea.KeyTab, Mod: tea.ModShift}
	case "backspace":
		return tea.KeyPressMsg{Code: tea.KeyBackspace}
	}
	r := []rune(k)[0]
	return tea.KeyPressMsg{Code: r, Text: k}
}

// newTestModel is a model over a fake source with the fixture applied, at
// w×h, without colour and with the clock stopped at now.
func newTestModel(t testing.TB, w, h int) (*Model, *fakeSource) {
	t.Helper()
	src := newFake()
	m := New(src, Options{Title: "bringup demo · seed ×20", Kernels: kernels.DefaultCatalog(),
		Now: func() time.Time { return now }, NoColor: true})
	m.Update(tea.WindowSizeMsg{Width: w, Height: h})
	m.Update(batchMsg(fleetFixture()))
	return m, src
}

// press sends keys and returns the last command.
func press(m *Model, keys ...string) tea.Cmd {
	var cmd tea.Cmd
	for _, k := range keys {
		_, cmd = m.Update(keyMsg(k))
	}
	return cmd
}

// typed is the keys that type s: one per character, a space as "space".
func typed(s string) []string {
	var out []string
	for _, r := range s {
		if r == ' ' {
			out = append(out, "space")
			continue
		}
		out = append(out, string(r))
	}
	return out
}

// render is the model's screen content.
func render(m *Model) string { return m.View().Content }

func lines(s string) []string { return strings.Split(s, "\n") }
