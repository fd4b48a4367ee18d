package record

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"bringup/kernels"
	"bringup/remote"
	"bringup/remote/event"
	"bringup/remote/sim"
)

// unitDriver emits one unit event and stops.
type unitDriver struct{ u event.Unit }

func (d unitDriver) Name() string { return "gpu1" }
func (d unitDriver) Run(_ context.Context, emit remote.Emit) error {
	u := d.u
	emit(event.Event{Host: "gpu1", Kind: event.KindUnit, Time: time.Now(), Unit: &u})
	return nil
}
func (unitDriver) Do(context.Context, remote.Action, remote.Emit) error { return nil }

// TestRecordRedactsEnvironment: --record keeps the keys of the unit's
// Environment and the values the replay needs (the kernel catalog's mode
// variable, PYTHONPATH); every other value, a token or a key, is
// "<redacted>" in the file, while the fleet still gets the event whole.
// --record-env (keepEnv) records everything.
func TestRecordRedactsEnvironment(t *testing.T) {
	env := []string{"KDTREE_MODE=validate", "PYTHONPATH=/opt/kdtree/site", "HF_TOKEN=hf_s3cr3t", "OPENAI_API_KEY=sk-s3cr3t", "ODD"}
	for _, keepEnv := range []bool{false, true} {
		path := filepath.Join(t.TempDir(), "r.jsonl")
		specs := []remote.HostSpec{{Driver: unitDriver{event.Unit{Name: "sglang.service", ActiveState: "active", SubState: "running", Environment: env}}, Unit: "sglang.service"}}
		clock := sim.NewManualClock(time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC))
		rec, err := Start(path, specs, remote.Options{Kernels: kernels.DefaultCatalog(), Clock: clock}, 1, "test", keepEnv)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		_ = specs[0].Driver.Run(context.Background(), func(ev event.Event) bool { got = ev.Unit.Environment; return true })
		if err := rec.Close(); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, env) {
			t.Errorf("keepEnv %v: the fleet got %q, want the Environment as the host sent it", keepEnv, got)
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		loaded, err := Load(path)
		if err != nil {
			t.Fatal(err)
		}
		recorded := loaded.Entries[0].Unit.Environment
		want := []string{"KDTREE_MODE=validate", "PYTHONPATH=/opt/kdtree/site", "HF_TOKEN=<redacted>", "OPENAI_API_KEY=<redacted>", "<redacted>"}
		if keepEnv {
			want = env
		}
		if !slices.Equal(recorded, want) || loaded.KeepEnv != keepEnv {
			t.Errorf("keepEnv %v: recorded %q (header keep_env %v), want %q", keepEnv, recorded, loaded.KeepEnv, want)
		}
		if secret := strings.Contains(string(raw), "s3cr3t"); secret != keepEnv {
			t.Errorf("keepEnv %v: a secret in the file: %v", keepEnv, secret)
		}
		// The replay still knows the mode in force.
		if m := loaded.Kernels.ModesIn(recorded); len(m) != 1 || m[0].Mode != "validate" {
			t.Errorf("keepEnv %v: modes in the recording %+v", keepEnv, m)
		}
	}
}
