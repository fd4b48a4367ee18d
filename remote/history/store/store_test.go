package store

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/remote/history"
	"github.com/bringup-dev/bringup/remote/startup"
)

var t0 = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

// served is a record of a startup of host in mode that began at t0+at and
// served once its weights had loaded, which took weights.
func served(host, mode string, at, weights time.Duration) history.Record {
	start := t0.Add(at)
	loaded := start.Add(weights)
	return history.Record{Time: loaded, Host: host, Unit: "sglang.service", Engine: "sglang",
		Modes: map[string]string{"kdtree-verify": mode}, Total: weights, WeightMemMiB: int(weights / time.Second),
		Spans: []startup.Span{{Phase: startup.Weights, Start: start, End: loaded}, {Phase: startup.Serving, Start: loaded}}}
}

func TestStoreRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "bringup", "history.jsonl")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	a, b := served("gpu1", "on", 0, 300*time.Second), served("gpu2", "on", time.Hour, 301*time.Second)
	for _, r := range []history.Record{a, b} {
		if err := s.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("file mode = %v, want 0600", fi.Mode().Perm())
	}
	di, err := os.Stat(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	if di.Mode().Perm() != 0o700 {
		t.Errorf("dir mode = %v, want 0700", di.Mode().Perm())
	}
	again, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	got := again.Records("sglang.service", map[string]string{"kdtree-verify": "on"})
	if len(got) != 2 || again.Skipped() != 0 {
		t.Fatalf("records %d skipped %d", len(got), again.Skipped())
	}
	for _, r := range got {
		want := a
		if r.Host == "gpu2" {
			want = b
		}
		if !r.Time.Equal(want.Time) || r.Total != want.Total || len(r.Spans) != len(want.Spans) ||
			!r.Spans[0].End.Equal(want.Spans[0].End) || r.Modes["kdtree-verify"] != "on" || r.WeightMemMiB != want.WeightMemMiB {
			t.Errorf("round trip: got %+v, want %+v", r, want)
		}
	}
}

func TestStoreSkipsCorruptLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.jsonl")
	good := served("gpu1", "on", 0, 300*time.Second)
	s0, _ := Open(path)
	if err := s0.Append(good); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	// line 2: torn write; line 3: blank; line 4: valid JSON without a host.
	if _, err := f.WriteString("{\"time\":\"2026-11-30T1\n\n{\"unit\":\"x\"}\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := s0.Append(good); err != nil { // line 5
		t.Fatal(err)
	}
	s, err := Open(path)
	if err != nil {
		t.Fatalf("corrupt line is fatal: %v", err)
	}
	if n := len(s.Records("sglang.service", good.Modes)); n != 2 {
		t.Fatalf("records = %d, want 2", n)
	}
	if s.Skipped() != 2 {
		t.Fatalf("skipped = %d, want 2", s.Skipped())
	}
	p := s.Problems()
	if len(p) != 2 || !strings.HasPrefix(p[0].Error(), path+":2: ") || !strings.HasPrefix(p[1].Error(), path+":4: ") {
		t.Fatalf("problems = %v", p)
	}
}

func TestStoreBoundsMemoryPerKey(t *testing.T) {
	s, _ := Open(filepath.Join(t.TempDir(), "h.jsonl"))
	for i := range MaxPerKey + 5 {
		s.add(served("gpu1", "on", time.Duration(i)*time.Minute, time.Second))
	}
	s.add(served("gpu2", "on", 0, time.Second))
	got := s.Records("sglang.service", map[string]string{"kdtree-verify": "on"})
	if len(got) != MaxPerKey+1 {
		t.Fatalf("records = %d, want %d", len(got), MaxPerKey+1)
	}
}

func TestOpenUnreadable(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(dir); err == nil { // a directory cannot be read as lines
		t.Fatal("want an error for a directory")
	}
}

func TestDefaultPath(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	tests := []struct {
		env  map[string]string
		want string
		err  bool
	}{
		{map[string]string{"XDG_STATE_HOME": "/s", "HOME": "/h"}, "/s/bringup/history.jsonl", false},
		{map[string]string{"XDG_STATE_HOME": "rel", "HOME": "/h"}, "/h/.local/state/bringup/history.jsonl", false},
		{map[string]string{"HOME": "/h"}, "/h/.local/state/bringup/history.jsonl", false},
		{map[string]string{}, "", true},
	}
	for _, tc := range tests {
		got, err := DefaultPath(env(tc.env))
		if got != tc.want || (err != nil) != tc.err {
			t.Errorf("%v: got %q %v, want %q err=%v", tc.env, got, err, tc.want, tc.err)
		}
	}
}

func TestSinkExpectFollowsAppends(t *testing.T) {
	s, _ := Open(filepath.Join(t.TempDir(), "h.jsonl"))
	k := NewSink(s)
	on := map[string]string{"kdtree-verify": "on"}
	if _, ok := k.Expect("gpu1", "sglang.service", on); ok {
		t.Fatal("expectation without history")
	}
	if err := k.Record(served("gpu1", "on", 0, 300*time.Second)); err != nil {
		t.Fatal(err)
	}
	e, ok := k.Expect("gpu1", "sglang.service", on)
	if !ok || e.Runs != 1 || e.Phase[startup.Weights] != 300*time.Second {
		t.Fatalf("after one run: %+v %v", e, ok)
	}
}

func TestMemoryStore(t *testing.T) {
	on := map[string]string{"kdtree-verify": "on"}
	s := NewMemoryStore([]history.Record{served("gpu1", "on", 0, 300*time.Second), served("gpu2", "on", time.Hour, 320*time.Second)})
	if s.Path() != "" {
		t.Errorf("path = %q, want none", s.Path())
	}
	k := NewSink(s)
	e, ok := k.Expect("gpu1", "sglang.service", on)
	if !ok || e.Runs != 1 || e.Phase[startup.Weights] != 300*time.Second {
		t.Fatalf("gpu1 from the initial records: %+v %v", e, ok)
	}
	// With no path, any attempt to write a file would fail.
	if err := k.Record(served("gpu1", "on", 2*time.Hour, 310*time.Second)); err != nil {
		t.Fatal(err)
	}
	e, ok = k.Expect("gpu1", "sglang.service", on)
	if !ok || e.Runs != 2 || e.Phase[startup.Weights] != 305*time.Second {
		t.Fatalf("gpu1 after an append: %+v %v", e, ok)
	}
	if got := len(s.Records("sglang.service", on)); got != 3 {
		t.Errorf("records = %d, want 3", got)
	}
}

// TestThroughputRecordsKeptApart: throughput records go to the file and
// come back, apart from the startups (no room taken from the ETAs'), and
// the sink compares the modes from them.
func TestThroughputRecordsKeptApart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.jsonl")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	off, on := map[string]string{"kdtree-verify": "off"}, map[string]string{"kdtree-verify": "on"}
	recs := []history.Record{served("gpu3", "off", 0, 300*time.Second)}
	for i := range MaxPerKey + 5 {
		recs = append(recs, history.Throughput(t0.Add(time.Duration(i)*time.Minute), "gpu3", "sglang.service", "sglang", off, "", 480))
	}
	for _, r := range recs {
		if err := s.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	again, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := again.Records("sglang.service", off); len(got) != 1 || got[0].Kind != "" {
		t.Errorf("startup records %+v", got)
	}
	if got := again.Throughput("gpu3", "sglang.service"); len(got) != MaxPerKey || got[0].DecodeTPS != 480 {
		t.Errorf("%d throughput records", len(got))
	}
	ab := NewSink(again).Compare("gpu3", "sglang.service", on, 1920, 0)
	if ab.Base != "off" || ab.Ratio != 4 || ab.BaseRuns != 20 {
		t.Errorf("compare %+v", ab)
	}
}
