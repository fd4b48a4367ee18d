package probe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/sshx"
)

// pipeListener is a net.Listener fed by pipeDialer: the service and the
// prober talk over net.Pipe, as they would over an SSH channel.
type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }

// pipeDialer hands one end of a pipe to its listener per dial and records
// the addresses asked for; err, when set, fails every dial.
type pipeDialer struct {
	l     *pipeListener
	mu    sync.Mutex
	addrs []string
	err   error
}

func (d *pipeDialer) DialTCP(ctx context.Context, addr string) (net.Conn, error) {
	d.mu.Lock()
	d.addrs = append(d.addrs, addr)
	err := d.err
	d.mu.Unlock()
	if err != nil {
		return nil, err
	}
	c, s := net.Pipe()
	select {
	case d.l.conns <- s:
		return c, nil
	case <-d.l.done:
		return nil, fmt.Errorf("dial %s: connection refused", addr)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (d *pipeDialer) dialed() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.addrs...)
}

// serve runs h behind a pipeDialer until the test ends.
func serve(t *testing.T, h http.Handler) *pipeDialer {
	t.Helper()
	l := newPipeListener()
	srv := &http.Server{Handler: h}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(l)
	}()
	t.Cleanup(func() {
		srv.Close()
		<-done
	})
	return &pipeDialer{l: l}
}

// fakeSGLang answers like SGLang: /health is 503 until ready, then 200.
type fakeSGLang struct {
	ready     atomic.Bool
	models    string // the /v1/models answer
	completed atomic.Value
}

func (f *fakeSGLang) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/health":
		if !f.ready.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	case r.Method == http.MethodGet && r.URL.Path == "/v1/models":
		body := f.models
		if body == "" {
			body = `{"object":"list","data":[{"id":"deepseek-ai/DeepSeek-V3","object":"model"}]}`
		}
		fmt.Fprint(w, body)
	case r.Method == http.MethodPost && r.URL.Path == "/v1/completions":
		if r.Header.Get("Content-Type") != "application/json" {
			http.Error(w, "want json", http.StatusBadRequest)
			return
		}
		var req map[string]any
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		f.completed.Store(req)
		fmt.Fprint(w, `{"object":"text_completion","choices":[{"index":0,"text":" Paris","finish_reason":"length"}]}`)
	default:
		http.NotFound(w, r)
	}
}

func TestProbeHealth(t *testing.T) {
	f := &fakeSGLang{}
	d := serve(t, f)
	ctx := t.Context()

	r := Probe(ctx, d, Options{})
	if r.OK || r.Status != http.StatusServiceUnavailable || r.Path != "/health" || !strings.Contains(r.Err, "503") {
		t.Errorf("before ready: %+v, want 503 not OK on /health", r)
	}
	f.ready.Store(true)
	r = Probe(ctx, d, Options{})
	if !r.OK || r.Status != http.StatusOK || r.Err != "" || r.Latency <= 0 {
		t.Errorf("after ready: %+v, want 200 OK with a latency", r)
	}
	for _, a := range d.dialed() {
		if a != DefaultAddr {
			t.Errorf("dialed %q, want %q", a, DefaultAddr)
		}
	}
	if n := len(d.dialed()); n != 2 {
		t.Errorf("dialed %d times, want one channel per probe (2)", n)
	}

	r = Probe(ctx, d, Options{Addr: "127.0.0.1:8000", Path: "nope"})
	if r.OK || r.Status != http.StatusNotFound || r.Path != "/nope" {
		t.Errorf("custom path: %+v, want 404 on /nope", r)
	}
	if got := d.dialed(); got[len(got)-1] != "127.0.0.1:8000" {
		t.Errorf("dialed %q, want the configured address", got[len(got)-1])
	}
}

func TestProbeCompletion(t *testing.T) {
	f := &fakeSGLang{}
	f.ready.Store(true)
	d := serve(t, f)
	p := NewProber(d, Options{Completion: true})

	r := p.Probe(t.Context())
	if !r.OK || r.Path != CompletionPath || r.Status != http.StatusOK {
		t.Fatalf("completion probe: %+v, want OK on %s", r, CompletionPath)
	}
	req, _ := f.completed.Load().(map[string]any)
	want := map[string]any{"model": "deepseek-ai/DeepSeek-V3", "prompt": "ping", "max_tokens": float64(1)}
	for k, v := range want {
		if req[k] != v {
			t.Errorf("request %s = %v, want %v (request %v)", k, req[k], v, req)
		}
	}
	text, c := p.Complete(t.Context(), "m")
	if text != " Paris" || !c.OK {
		t.Errorf("Complete = %q, %+v; want \" Paris\", OK", text, c)
	}
}

func TestProbeFailures(t *testing.T) {
	tests := []struct {
		name    string
		models  string
		ready   bool
		dialErr error
		opts    Options
		path    string
		errHas  string
	}{
		{name: "dial refused", dialErr: errors.New("open tcp 127.0.0.1:30000: connect failed (Connection refused)"), path: "/health", errHas: "Connection refused"},
		{name: "not connected", dialErr: fmt.Errorf("gpu1: %w", sshx.ErrNotConnected), path: "/health", errHas: "not connected"},
		{name: "no models", ready: true, models: `{"data":[]}`, opts: Options{Completion: true}, path: ModelsPath, errHas: "no model listed"},
		{name: "bad models json", ready: true, models: `<html>`, opts: Options{Completion: true}, path: ModelsPath, errHas: "decode answer"},
		{name: "unhealthy skips completion", opts: Options{Completion: true}, path: "/health", errHas: "503 Service Unavailable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeSGLang{models: tt.models}
			f.ready.Store(tt.ready)
			d := serve(t, f)
			d.err = tt.dialErr
			r := Probe(t.Context(), d, tt.opts)
			if r.OK || r.Path != tt.path || !strings.Contains(r.Err, tt.errHas) {
				t.Errorf("got %+v, want not OK on %s with error containing %q", r, tt.path, tt.errHas)
			}
			if tt.dialErr != nil && r.Status != 0 {
				t.Errorf("status %d without an answer, want 0", r.Status)
			}
		})
	}
}

func TestProbeTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		d := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}))
		defer close(release)
		start := time.Now()
		r := Probe(t.Context(), d, Options{})
		if r.OK || r.Status != 0 || r.Err == "" {
			t.Errorf("hung service: %+v, want an error", r)
		}
		if el := time.Since(start); el != DefaultTimeout {
			t.Errorf("gave up after %v, want the default timeout %v", el, DefaultTimeout)
		}
	})
}

func TestRunIntervals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeSGLang{}
		d := serve(t, f)
		var evs []event.Event
		emit := func(e event.Event) bool {
			evs = append(evs, e)
			if len(evs) == 3 {
				f.ready.Store(true)
			}
			return len(evs) < 6
		}
		if err := Run(t.Context(), d, Options{}, "gpu1", 0, emit); err != nil {
			t.Fatalf("Run = %v, want nil when emit refuses", err)
		}
		wantStatus := []int{503, 503, 503, 200, 200, 200}
		wantGap := []time.Duration{0, 500 * time.Millisecond, 500 * time.Millisecond, 500 * time.Millisecond, 5 * time.Second, 5 * time.Second}
		for i, e := range evs {
			if e.Host != "gpu1" || e.Kind != event.KindProbe || e.Probe == nil || e.Time.IsZero() || !e.Seen.Equal(e.Time) {
				t.Fatalf("event %d: %+v, want a probe event of gpu1 with times", i, e)
			}
			if e.Probe.Status != wantStatus[i] {
				t.Errorf("event %d: status %d, want %d", i, e.Probe.Status, wantStatus[i])
			}
			if i > 0 {
				if gap := e.Time.Sub(evs[i-1].Time); gap != wantGap[i] {
					t.Errorf("event %d: %v after the previous, want %v", i, gap, wantGap[i])
				}
			}
		}
	})
}

func TestRunNotConnectedSlows(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := serve(t, http.NotFoundHandler())
		d.err = fmt.Errorf("gpu1: %w", sshx.ErrNotConnected)
		var times []time.Time
		err := Run(t.Context(), d, Options{}, "gpu1", time.Second, func(e event.Event) bool {
			times = append(times, e.Time)
			return len(times) < 3
		})
		if err != nil {
			t.Fatalf("Run = %v", err)
		}
		for i := 1; i < len(times); i++ {
			if gap := times[i].Sub(times[i-1]); gap != 2500*time.Millisecond {
				t.Errorf("probe %d came %v after the previous, want the slow 2.5 s while not connected", i, gap)
			}
		}
	})
}

func TestRunStopsWithContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := serve(t, http.NotFoundHandler())
		ctx, cancel := context.WithCancel(t.Context())
		n := 0
		err := Run(ctx, d, Options{}, "gpu1", 0, func(event.Event) bool {
			n++
			if n == 2 {
				cancel()
			}
			return true
		})
		if !errors.Is(err, context.Canceled) || n != 2 {
			t.Errorf("Run = %v after %d events, want context.Canceled after 2", err, n)
		}
	})
}

func TestNextInterval(t *testing.T) {
	base := 2 * time.Second
	for _, tc := range []struct {
		name              string
		ok, down, relaxed bool
		want              time.Duration
	}{
		{"starting, not answering yet", false, false, false, 500 * time.Millisecond},
		{"starting, healthy", true, false, false, 5 * time.Second},
		{"connection down", false, true, false, 5 * time.Second},
		{"steady and healthy", true, false, true, 30 * time.Second},
		{"steady, not answering (stopped, failed)", false, false, true, 5 * time.Second},
		{"steady, connection down", false, true, true, 5 * time.Second},
	} {
		if got := nextInterval(base, tc.ok, tc.down, tc.relaxed); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// RunPaced probes a relaxed host that answers every 15×base, and probes
// at once when the pace changes: a host that starts again is probed fast.
func TestRunPacedRelaxes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeSGLang{}
		f.ready.Store(true)
		d := serve(t, f)
		var relaxed atomic.Bool
		relaxed.Store(true)
		changed := make(chan struct{}, 1)
		var evs []event.Event
		emit := func(e event.Event) bool {
			evs = append(evs, e)
			if len(evs) == 3 {
				// The host starts again, 10 s into the relaxed wait.
				go func() {
					time.Sleep(10 * time.Second)
					relaxed.Store(false)
					f.ready.Store(false)
					changed <- struct{}{}
				}()
			}
			return len(evs) < 5
		}
		err := RunPaced(t.Context(), d, Options{}, "gpu1", 0, Pacing{Relaxed: relaxed.Load, Changed: changed}, emit)
		if err != nil {
			t.Fatalf("RunPaced = %v", err)
		}
		wantGap := []time.Duration{0, 30 * time.Second, 30 * time.Second, 10 * time.Second, 500 * time.Millisecond}
		wantOK := []bool{true, true, true, false, false}
		for i, e := range evs {
			if e.Probe.OK != wantOK[i] {
				t.Errorf("probe %d: OK %v, want %v", i, e.Probe.OK, wantOK[i])
			}
			if i > 0 {
				if gap := e.Time.Sub(evs[i-1].Time); gap != wantGap[i] {
					t.Errorf("probe %d came %v after the previous, want %v", i, gap, wantGap[i])
				}
			}
		}
	})
}
