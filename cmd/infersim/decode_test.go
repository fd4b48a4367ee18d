package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/remote/bench"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/sim/sglang"
	"github.com/bringup-dev/bringup/remote/startup"
)

// TestDecodeRateByMode: the kernel mode sets the rate (on 4× off by
// default, INFERSIM_DECODE_TPS overrides), a completion takes at least its
// tokens' time at its share, and the tokens decoded are what the stats
// line reports.
func TestDecodeRateByMode(t *testing.T) {
	rate := func(env map[string]string) float64 {
		t.Helper()
		cfg, err := parseConfig(nil, func(k string) string { return env[k] })
		if err != nil {
			t.Fatal(err)
		}
		return cfg.params.Rates.Rate(cfg.params.Kernel.Mode)
	}
	on := rate(map[string]string{"PYTHONPATH": t.TempDir(), "KDTREE_MODE": "on"})
	off := rate(map[string]string{"PYTHONPATH": t.TempDir(), "KDTREE_MODE": "off"})
	if on != 4*off || off <= 0 {
		t.Errorf("on %v tok/s, off %v: want on = 4× off", on, off)
	}
	if r := rate(map[string]string{"PYTHONPATH": t.TempDir(), "KDTREE_MODE": "on", "INFERSIM_DECODE_TPS": "on=1000"}); r != 1000 {
		t.Errorf("INFERSIM_DECODE_TPS on=1000: %v", r)
	}
	for _, bad := range []map[string]string{{"INFERSIM_DECODE_TPS": "on=fast"}, {"INFERSIM_LOAD": "-1"}, {"INFERSIM_STATS_SECONDS": "0"}} {
		if _, err := parseConfig(nil, func(k string) string { return bad[k] }); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}

	// One request of 9 tokens alone decodes at rate/8: at least 9/240 s
	// on, four times that off.
	for _, r := range []float64{on, off} {
		d := &decoder{rate: r, interval: time.Second}
		begin := time.Now()
		if !d.generate(t.Context(), 9, nil) {
			t.Fatal("generate gave up")
		}
		if took, least := time.Since(begin), time.Duration(9/(r/sglang.FullBatch)*float64(time.Second)); took < least {
			t.Errorf("rate %v: 9 tokens in %v, want at least %v", r, took, least)
		}
		// The stats over one second: the 9 tokens decoded.
		if b, busy := d.batch(time.Second); !busy || b.GenTPS < 8.999 || b.GenTPS > 9.001 {
			t.Errorf("rate %v: batch %+v", r, b)
		}
		if _, busy := d.batch(time.Second); busy {
			t.Error("an idle interval reported as busy")
		}
		// A full background batch decodes at the mode's rate.
		d.load = sglang.FullBatch
		if b, _ := d.batch(2 * time.Second); b.GenTPS != r || b.Running != sglang.FullBatch {
			t.Errorf("rate %v at a full batch: %+v", r, b)
		}
	}
	// A cancelled request stops decoding.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if (&decoder{rate: off, interval: time.Second}).generate(ctx, 1000, nil) {
		t.Error("a cancelled request decoded on")
	}
}

// TestServeStatsLines: once serving, infersim prints its engine's stats
// line, which the phase engine reads at the mode's rate, for both engines.
func TestServeStatsLines(t *testing.T) {
	t.Parallel() // real time on a loopback port of its own
	for _, eng := range []string{"sglang", "vllm"} {
		env := map[string]string{"INFERSIM_ENGINE": eng, "PYTHONPATH": t.TempDir(), "KDTREE_MODE": "on", "INFERSIM_LOAD": "8",
			"INFERSIM_STATS_SECONDS": "0.1", "INFERSIM_STATE_DIR": t.TempDir(), "INFERSIM_SHARDS": "1"}
		for _, k := range []string{"BOOT", "INIT", "WEIGHTS", "KV", "CAPTURE", "HTTP", "WARMUP"} {
			env["INFERSIM_"+k+"_SECONDS"] = "0.01"
		}
		args := []string{"--port", fmt.Sprint(freePort(t)), "--host", "127.0.0.1"}
		if eng == "vllm" {
			args = append([]string{"serve", "/models/demo"}, args...)
		}
		cfg, err := parseConfig(args, func(k string) string { return env[k] })
		if err != nil {
			t.Fatal(err)
		}
		out := &syncBuffer{}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan int)
		go func() { done <- serve(ctx, cfg, out, out) }()
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) && strings.Count(out.String(), "gen throughput")+strings.Count(out.String(), "generation throughput") < 3 {
			time.Sleep(20 * time.Millisecond)
		}
		cancel()
		<-done
		tr := startup.NewTracker(startup.Options{Engine: eng})
		for _, l := range strings.Split(out.String(), "\n") {
			tr.Apply(event.Event{Kind: event.KindJournal, Time: time.Now(), Journal: &event.Journal{Message: l}})
		}
		st := tr.State().Stats
		if st == nil || len(st.Decode) < 3 {
			t.Fatalf("%s: stats %+v from:\n%s", eng, st, out.String())
		}
		for _, v := range st.Decode {
			if v < 1919 || v > 1921 {
				t.Errorf("%s: decode %v tok/s, want 1920 (8 streams at mode on)", eng, v)
			}
		}
	}
}

// syncBuffer is a bytes.Buffer safe for the server's writers and the
// test's reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// localDialer dials the test server, wherever the host's address points.
type localDialer string

func (d localDialer) DialTCP(ctx context.Context, _ string) (net.Conn, error) {
	var nd net.Dialer
	return nd.DialContext(ctx, "tcp", string(d))
}

// TestBenchAgainstModes: bringup's smoke load against infersim's streamed
// completions: every request answers, tokens stream one at a time, and
// mode on serves well over twice the output rate of off (4× by the
// rates; the margin is for a busy machine, which only slows on).
func TestBenchAgainstModes(t *testing.T) {
	rate := map[string]float64{}
	for _, mode := range []string{"on", "off"} {
		p := sglang.Params{ModelPath: "/models/demo", Kernel: sglang.Kernel{Name: "kdtree-verify", Mode: mode, CaptureSafe: true}, Rates: sglang.DefaultRates()}
		s := newServer(sglangEngine{}, p, &logWriter{stdout: io.Discard, stderr: io.Discard})
		s.ready.Store(true)
		ts := httptest.NewServer(s)
		res, err := bench.Run(t.Context(), localDialer(strings.TrimPrefix(ts.URL, "http://")), bench.Options{Addr: "127.0.0.1:30000", Requests: 32, Concurrency: 8}, nil)
		ts.Close()
		if err != nil {
			t.Fatal(err)
		}
		_, tokens := completion(bench.DefaultMaxTokens)
		if res.OK != 32 || res.Errors != 0 || res.OutputTokens != 32*tokens || res.TTFTP50 <= 0 || res.TTFTP50 >= res.LatencyP50 {
			t.Fatalf("mode %s: %+v", mode, res)
		}
		rate[mode] = res.OutputTPS
		t.Logf("mode %s: %.0f output tok/s, ttft p50 %v, latency p50 %v", mode, res.OutputTPS, res.TTFTP50, res.LatencyP50)
	}
	if rate["off"] > sglang.DefaultRates()["off"]*1.05 || rate["on"] < 2*rate["off"] {
		t.Errorf("output rates %v: want off at most its 480 tok/s and on over twice off", rate)
	}
}
