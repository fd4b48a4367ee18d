package record

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/fleet"
	"github.com/bringup-dev/bringup/remote/sim"
	"github.com/bringup-dev/bringup/remote/startup"
)

// story is what a fleet showed: per host, its phases in order, and the
// cause of its failure if it failed.
type story struct {
	phases map[string][]startup.Phase
	causes map[string]string
}

// watchUntilSettled runs fleet until every host serves or failed and
// returns what it showed.
func watchUntilSettled(t *testing.T, theFleet *fleet.Fleet) story {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	done := make(chan error, 1)
	go func() { done <- theFleet.Run(ctx) }()
	defer func() { cancel(); _ = <-done }()
	s := story{phases: map[string][]startup.Phase{}, causes: map[string]string{}}
	for {
		select {
		case b := <-theFleet.Updates():
			for _, c := range b.Changes {
				// Stuck is the fleet's clock ticking past a quiet spell,
				// not an event: whether a tick falls inside one depends on
				// the speed, so it is left out of the story.
				if c.Kind == startup.ChangePhase && c.Phase != startup.Stuck {
					if p := s.phases[c.Host]; len(p) == 0 || p[len(p)-1] != c.Phase {
						s.phases[c.Host] = append(p, c.Phase)
					}
				}
			}
			settled := true
			for _, h := range b.Hosts {
				switch h.Startup.Phase {
				case startup.Serving:
				case startup.Failed:
					if h.Startup.Diag != nil {
						s.causes[h.Name] = h.Startup.Diag.Cause
					}
				default:
					settled = false
				}
			}
			if settled {
				return s
			}
		case <-ctx.Done():
			t.Fatalf("fleet did not settle: %+v", s)
		}
	}
}

// TestRecordAndReplaySeed records the simulated seed fleet and replays the
// file: the replayed fleet shows every host through the same phases, and
// gpu3's failure with the same cause.
func TestRecordAndReplaySeed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "seed.jsonl")
	cat := kernels.DefaultCatalog()
	drivers, clock, err := sim.NewFleet("seed", sim.Options{Speed: 1500, Kernels: cat})
	if err != nil {
		t.Fatal(err)
	}
	hdr := Header{Speed: 1500, Source: "demo seed", Kernels: cat}
	for _, d := range drivers {
		hdr.Hosts = append(hdr.Hosts, Host{Name: d.Name(), Unit: "sglang.service", Engine: "sglang"})
	}
	rec, err := Create(path, hdr, clock)
	if err != nil {
		t.Fatal(err)
	}
	specs := make([]fleet.HostSpec, len(drivers))
	for i, d := range drivers {
		specs[i] = fleet.HostSpec{Driver: rec.Wrap(d), Unit: "sglang.service", Engine: "sglang"}
	}
	live, err := fleet.New(specs, fleet.Options{Kernels: cat, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	want := watchUntilSettled(t, live)
	if err := rec.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if want.causes["gpu3"] != "graph-capture-host-sync" || len(want.causes) != 1 {
		t.Fatalf("recorded run: causes %v, want gpu3 graph-capture-host-sync only", want.causes)
	}

	loaded, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if loaded.Truncated || len(loaded.Entries) != rec.Count() || loaded.Speed != 1500 || len(loaded.Hosts) != 4 {
		t.Fatalf("loaded %d entries (recorded %d), truncated %v, speed %v, hosts %v",
			len(loaded.Entries), rec.Count(), loaded.Truncated, loaded.Speed, loaded.Hosts)
	}
	// Replayed three times faster than recorded.
	rspecs, rclock := loaded.Play(4500, nil)
	replay, err := fleet.New(rspecs, fleet.Options{Kernels: loaded.Kernels, Clock: rclock, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	got := watchUntilSettled(t, replay)
	t.Logf("%d events recorded; gpu3 %v %s", rec.Count(), got.phases["gpu3"], got.causes["gpu3"])
	for _, h := range []string{"gpu1", "gpu2", "gpu3", "gpu4"} {
		if !slices.Equal(got.phases[h], want.phases[h]) {
			t.Errorf("%s: replay phases %v, recorded %v", h, got.phases[h], want.phases[h])
		}
	}
	if fmt.Sprint(got.causes) != fmt.Sprint(want.causes) {
		t.Errorf("replay causes %v, recorded %v", got.causes, want.causes)
	}
	if _, err := replay.Do("gpu3", remote.Action{Kind: remote.ActRestart}); err == nil {
		t.Error("replay fleet accepted a restart")
	}
	if err := rspecs[0].Driver.Do(context.Background(), remote.Action{Kind: remote.ActRestart}, nil); !errors.Is(err, ErrReplay) {
		t.Errorf("replay driver Do = %v, want ErrReplay", err)
	}
}

// TestReplayKeepsRecordedTimes checks the replay schedule: an event comes
// out when the replay clock reaches the host time it was recorded at, and
// carries the recorded timestamps.
func TestReplayKeepsRecordedTimes(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC)
	rec := &Recording{Header: Header{Format: Format, Started: t0, Speed: 1, Hosts: []Host{{Name: "gpu1", Unit: "u.service"}}}}
	for i := range 3 {
		at := t0.Add(time.Duration(i) * 10 * time.Second)
		rec.Entries = append(rec.Entries, Entry{At: at, Event: event.Event{Host: "gpu1", Kind: event.KindJournal,
			Time: at.Add(-time.Second), Seen: at, Journal: &event.Journal{Message: fmt.Sprintf("line %d", i)}}})
	}
	fr := sim.NewManualClock(t0) // real time, moved by hand
	specs, clock := rec.Play(100, fr.Now)
	if !clock.Now().Equal(t0) {
		t.Fatalf("clock starts at %s, want %s", clock.Now(), t0)
	}
	fr.Advance(150 * time.Millisecond) // 15 s of host time at ×100
	if got := clock.Now(); !got.Equal(t0.Add(15 * time.Second)) {
		t.Fatalf("clock after 150 ms at ×100: %s", got)
	}
	fr.Advance(time.Second) // 100 s at ×100: past the last entry (+20 s)
	if got := clock.Now(); !got.Equal(t0.Add(20*time.Second)) || !clock.Ended() {
		t.Fatalf("clock past the end: %s (ended %v), want it stopped at the last entry", got, clock.Ended())
	}
	fr.Advance(-time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var got []event.Event
	errc := make(chan error, 1)
	go func() {
		errc <- specs[0].Driver.Run(ctx, func(e event.Event) bool {
			got = append(got, e)
			if len(got) == 3 {
				cancel()
			}
			return true
		})
	}()
	// The third entry (at +20 s) is 5 s of host time away: 50 ms real at
	// ×100. The player waits for the clock to get there.
	fr.Advance(50 * time.Millisecond)
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v", err)
	}
	for i, e := range got {
		if e.Journal.Message != fmt.Sprintf("line %d", i) || !e.Time.Equal(rec.Entries[i].Time) || !e.Seen.Equal(rec.Entries[i].Seen) {
			t.Errorf("event %d: %+v, want recorded %+v", i, e, rec.Entries[i].Event)
		}
	}
}

func TestLoadErrorsNamePlace(t *testing.T) {
	hdr := `{"format":"bringup-record/1","started":"2026-11-30T03:00:00Z","speed":1,"hosts":[{"name":"gpu1","unit":"sglang.service"}],"kernels":{}}`
	entry := `{"at":"2026-11-30T03:00:01Z","host":"gpu1","kind":"journal","time":"2026-11-30T03:00:01Z","seen":"2026-11-30T03:00:01Z","journal":{"priority":6,"message":"hi"}}`
	cases := []struct {
		name, text, want string
	}{
		{"empty", "", "rec.jsonl:1: empty file: not a bringup recording"},
		{"not json", "hello\n", "rec.jsonl:1: not a bringup recording: invalid character 'h'"},
		{"other format", strings.Replace(hdr, "bringup-record/1", "bringup-record/9", 1) + "\n",
			`rec.jsonl:1: format: "bringup-record/9": not a bringup recording of this version`},
		{"no hosts", strings.Replace(hdr, `[{"name":"gpu1","unit":"sglang.service"}]`, `[]`, 1) + "\n", "rec.jsonl:1: hosts: no hosts"},
		{"escape in a host name", strings.Replace(hdr, `"gpu1"`, `"gpu\u001b]0;x\u0007"`, 1) + "\n",
			`rec.jsonl:1: hosts[0].name: "gpu\x1b]0;x\a": character '\x1b' at byte 3 is not allowed in a name`},
		{"host twice", strings.Replace(hdr, `{"name":"gpu1","unit":"sglang.service"}`, `{"name":"gpu1","unit":"a.service"},{"name":"gpu1","unit":"b.service"}`, 1) + "\n",
			`rec.jsonl:1: hosts[1].name: "gpu1" listed twice`},
		{"escape in the source", strings.Replace(hdr, `"speed":1`, `"speed":1,"source":"demo\u001b[2J"`, 1) + "\n",
			`rec.jsonl:1: source: "demo\x1b[2J": not a short line of printable text`},
		{"escape in an engine", strings.Replace(hdr, `"unit":"sglang.service"`, `"unit":"sglang.service","engine":"sg\u001b[2J"`, 1) + "\n",
			`rec.jsonl:1: hosts[0].engine: "sg\x1b[2J": character '\x1b' at byte 2 is not allowed in a name`},
		{"escape in a kernel mode", strings.Replace(hdr, `"kernels":{}`, `"kernels":{"kernels":[{"name":"k","env_var":"K","modes":[{"name":"o\u009bn","capture_safe":true}]}]}`, 1) + "\n",
			`rec.jsonl:1: kernels[0].modes[0].name: "o\u009bn": character '\u009b' at byte 1 is not allowed in a name`},
		{"escape in a mode description", strings.Replace(hdr, `"kernels":{}`, `"kernels":{"kernels":[{"name":"k","env_var":"K","modes":[{"name":"on","capture_safe":true,"description":"x\u001b]0;t\u0007"}]}]}`, 1) + "\n",
			`rec.jsonl:1: kernels[0].modes[0].description: "x\x1b]0;t\a": not a short line of printable text`},
		{"bad speed", strings.Replace(hdr, `"speed":1`, `"speed":-2`, 1) + "\n", "rec.jsonl:1: speed: -2: must be greater than 0"},
		{"bad entry in the middle", hdr + "\n" + entry + "\n{\"at\":\n" + entry + "\n", "rec.jsonl:3: bad entry: unexpected end of JSON input"},
		{"unknown host", hdr + "\n" + strings.Replace(entry, `"host":"gpu1"`, `"host":"gpu9"`, 1) + "\n",
			`rec.jsonl:2: host: "gpu9" is not one of the recording's hosts`},
		{"unknown kind", hdr + "\n" + strings.Replace(entry, `"kind":"journal"`, `"kind":"weather"`, 1) + "\n",
			`rec.jsonl:2: kind: unknown kind "weather"`},
		{"kind without payload", hdr + "\n" + strings.Replace(entry, `"kind":"journal"`, `"kind":"unit"`, 1) + "\n",
			"rec.jsonl:2: unit: missing: the event has no payload of its kind"},
		{"no time", hdr + "\n" + strings.Replace(entry, `"at":"2026-11-30T03:00:01Z",`, ``, 1) + "\n", "rec.jsonl:2: at: missing"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Read("rec.jsonl", strings.NewReader(c.text))
			if err == nil || !strings.HasPrefix(err.Error(), c.want) {
				t.Fatalf("error %v\nwant prefix %s", err, c.want)
			}
		})
	}
	t.Run("cut last line", func(t *testing.T) {
		rec, err := Read("rec.jsonl", strings.NewReader(hdr+"\n"+entry+"\n"+entry[:40]))
		if err != nil || !rec.Truncated || len(rec.Entries) != 1 {
			t.Fatalf("cut last line: %v, truncated %v, %d entries; want the whole entry kept and the cut one left out",
				err, rec != nil && rec.Truncated, len(rec.Entries))
		}
	})
	t.Run("whole last line without newline", func(t *testing.T) {
		rec, err := Read("rec.jsonl", strings.NewReader(hdr+"\n"+entry))
		if err != nil || rec.Truncated || len(rec.Entries) != 1 {
			t.Fatalf("%v, %+v", err, rec)
		}
	})
}

// TestRecorderKeepsRawText checks that the file holds what the host sent
// (escape sequences included, JSON-escaped), so a replay goes through the
// same sanitiser the live run did, and that writing never puts a raw
// control byte in the file.
func TestRecorderKeepsRawText(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.jsonl")
	clock := sim.NewManualClock(time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC))
	rec, err := Create(path, Header{Hosts: []Host{{Name: "gpu1", Unit: "sglang.service"}}}, clock)
	if err != nil {
		t.Fatal(err)
	}
	hostile := "x\x1b]52;c;cGF5bG9hZA==\x07\x1b[2J"
	rec.Add(event.Event{Host: "gpu1", Kind: event.KindJournal, Time: clock.Now(), Journal: &event.Journal{Message: hostile}})
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	// A host still sending after the end is not recorded (and does not
	// write to a closed file).
	rec.Add(event.Event{Host: "gpu1", Kind: event.KindJournal, Time: clock.Now(), Journal: &event.Journal{Message: "late"}})
	if rec.Count() != 1 {
		t.Errorf("%d events recorded, want 1", rec.Count())
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(string(raw), "\x1b\x07") {
		t.Fatalf("raw control bytes in the file: %q", raw)
	}
	loaded, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(loaded.Entries) != 1 || loaded.Entries[0].Journal.Message != hostile || loaded.Entries[0].Seen.IsZero() {
		t.Fatalf("entries %+v", loaded.Entries)
	}
}

func TestCreateErrorNamesFile(t *testing.T) {
	_, err := Create(filepath.Join(t.TempDir(), "no", "such", "dir", "r.jsonl"), Header{}, sim.NewManualClock(time.Now()))
	if err == nil || !strings.Contains(err.Error(), "no/such/dir/r.jsonl") {
		t.Fatalf("Create in a missing directory: %v", err)
	}
}

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
	exec := "/usr/bin/env HF_TOKEN=hf_s3cr3t /opt/venv/bin/python3 -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3 --tp 8 --api-key sk-s3cr3t"
	for _, keepEnv := range []bool{false, true} {
		path := filepath.Join(t.TempDir(), "r.jsonl")
		specs := []fleet.HostSpec{{Driver: unitDriver{event.Unit{Name: "sglang.service", ActiveState: "active", SubState: "running", Environment: env, ExecStart: exec}}, Unit: "sglang.service"}}
		clock := sim.NewManualClock(time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC))
		rec, err := Start(path, specs, fleet.Options{Kernels: kernels.DefaultCatalog(), Clock: clock}, 1, "test", keepEnv)
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
		wantExec := "/usr/bin/env HF_TOKEN=<redacted> /opt/venv/bin/python3 -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3 --tp 8 --api-key <redacted>"
		if keepEnv {
			wantExec = exec
		}
		if got := loaded.Entries[0].Unit.ExecStart; got != wantExec {
			t.Errorf("keepEnv %v: ExecStart recorded as %q, want %q", keepEnv, got, wantExec)
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

// TestRedactArgv: secret-named options and assignments and URL
// credentials lose their values; paths, flags the preflight reads and
// look-alike names (--tokenizer-path, --ssl-keyfile) stay.
func TestRedactArgv(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"python3 -m sglang.launch_server --model-path /models/x --disable-cuda-graph",
			"python3 -m sglang.launch_server --model-path /models/x --disable-cuda-graph"},
		{"vllm serve m --api-key sk-1 --hf-token=hf_2 --enforce-eager",
			"vllm serve m --api-key <redacted> --hf-token=<redacted> --enforce-eager"},
		{"x --admin_api_key  k3  --tokenizer-path /t --ssl-keyfile /etc/k.pem --tokenizer-mode auto",
			"x --admin_api_key  <redacted>  --tokenizer-path /t --ssl-keyfile /etc/k.pem --tokenizer-mode auto"},
		{"env HF_TOKEN=a AWS_SECRET_ACCESS_KEY=b CUDA_VISIBLE_DEVICES=0,1 NCCL_DEBUG=INFO python3 x",
			"env HF_TOKEN=<redacted> AWS_SECRET_ACCESS_KEY=<redacted> CUDA_VISIBLE_DEVICES=0,1 NCCL_DEBUG=INFO python3 x"},
		{"x --api-key --port 30000", "x --api-key --port 30000"}, // no value: the next flag stays
		{"x --download-dir https://user:pw@example.com/m?x=1 --url http://h:1/p",
			"x --download-dir https://<redacted>@example.com/m?x=1 --url http://h:1/p"},
		{"x\t--password\tp w", "x\t--password\t<redacted> w"},
	} {
		if got := RedactArgv(tc.in); got != tc.want {
			t.Errorf("RedactArgv(%q)\n got %q\nwant %q", tc.in, got, tc.want)
		}
	}
}
