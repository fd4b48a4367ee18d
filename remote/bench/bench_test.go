package bench

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// tcpDialer dials one local address whatever the host's address says, as
// an SSH tunnel to the host's port would.
type tcpDialer struct {
	addr  string
	dials atomic.Int64
}

func (d *tcpDialer) DialTCP(ctx context.Context, _ string) (net.Conn, error) {
	d.dials.Add(1)
	var nd net.Dialer
	return nd.DialContext(ctx, "tcp", d.addr)
}

// engine is a stand-in OpenAI completion route that streams tokens words
// each delay apart, counting requests and the most in flight; every
// failEvery-th request answers 500.
type engine struct {
	tokens    int
	delay     time.Duration
	failEvery int64
	requests  atomic.Int64
	inflight  atomic.Int64
	mu        sync.Mutex
	maxIn     int64
}

func (e *engine) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/v1/models" {
		fmt.Fprint(w, `{"object":"list","data":[{"id":"/models/demo","object":"model"}]}`)
		return
	}
	n := e.requests.Add(1)
	in := e.inflight.Add(1)
	defer e.inflight.Add(-1)
	e.mu.Lock()
	e.maxIn = max(e.maxIn, in)
	e.mu.Unlock()
	if e.failEvery > 0 && n%e.failEvery == 0 {
		http.Error(w, `{"object":"error","message":"boom"}`, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	for i := range e.tokens {
		select {
		case <-r.Context().Done():
			return
		case <-time.After(e.delay):
		}
		fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"text\":\" w%d\"}]}\n\n", i)
		w.(http.Flusher).Flush()
	}
	fmt.Fprintf(w, "data: {\"choices\":[],\"usage\":{\"completion_tokens\":%d}}\n\ndata: [DONE]\n\n", e.tokens)
}

func serve(t *testing.T, e *engine) *tcpDialer {
	t.Helper()
	ts := httptest.NewServer(e)
	t.Cleanup(ts.Close)
	return &tcpDialer{addr: strings.TrimPrefix(ts.URL, "http://")}
}

// TestRunBounded: exactly Requests requests, never more than Concurrency
// at a time, errors counted, tokens and times measured, progress told.
func TestRunBounded(t *testing.T) {
	e := &engine{tokens: 5, delay: 2 * time.Millisecond, failEvery: 10}
	d := serve(t, e)
	var last atomic.Int64
	res, err := Run(t.Context(), d, Options{Addr: "127.0.0.1:30000", Requests: 40, Concurrency: 4}, func(done, total int) {
		if total != 40 {
			t.Errorf("progress total %d", total)
		}
		last.Store(int64(done))
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := e.requests.Load(); got != 40 {
		t.Errorf("%d completion requests, want 40", got)
	}
	if e.maxIn > 4 {
		t.Errorf("%d requests in flight at once, want at most 4", e.maxIn)
	}
	if res.Requests != 40 || res.OK != 36 || res.Errors != 4 || !strings.Contains(res.FirstError, "status 500") || res.Interrupted {
		t.Errorf("result %+v", res)
	}
	if res.Model != "/models/demo" || res.OutputTokens != 36*5 || res.OutputTPS <= 0 || res.ReqPerSec <= 0 {
		t.Errorf("result %+v", res)
	}
	// The first token comes after one delay, the last after five.
	if res.TTFTP50 < 2*time.Millisecond || res.LatencyP50 < 10*time.Millisecond || res.TTFTP50 >= res.LatencyP50 || res.LatencyP99 < res.LatencyP50 {
		t.Errorf("times: ttft p50 %v, latency p50 %v p99 %v", res.TTFTP50, res.LatencyP50, res.LatencyP99)
	}
	if last.Load() != 40 {
		t.Errorf("progress ended at %d", last.Load())
	}
	if n := d.dials.Load(); n != 41 { // /v1/models, then a channel a request
		t.Errorf("%d dials, want 41", n)
	}
}

// TestRunStops: a cancelled load stops sending and says so; it never
// sends more than asked.
func TestRunStops(t *testing.T) {
	e := &engine{tokens: 50, delay: 5 * time.Millisecond}
	d := serve(t, e)
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(100*time.Millisecond, cancel)
	res, err := Run(ctx, d, Options{Addr: "x:1", Requests: 1000, Concurrency: 8, Model: "m"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Interrupted || e.requests.Load() >= 1000 || res.Requests >= 1000 {
		t.Errorf("stopped load: %+v after %d requests", res, e.requests.Load())
	}
	if res.Errors != 0 {
		t.Errorf("a stop counted as errors: %+v", res)
	}
}

func TestPercentile(t *testing.T) {
	ds := []time.Duration{5, 1, 4, 2, 3, 10, 9, 8, 7, 6}
	for p, want := range map[int]time.Duration{50: 5, 99: 10, 90: 9, 10: 1, 100: 10} {
		if got := Percentile(ds, p); got != want {
			t.Errorf("p%d = %v, want %v", p, got, want)
		}
	}
	if Percentile(nil, 50) != 0 {
		t.Error("percentile of none")
	}
}

func TestNoModel(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, `{"data":[]}`) }))
	defer ts.Close()
	if _, err := Run(t.Context(), &tcpDialer{addr: strings.TrimPrefix(ts.URL, "http://")}, Options{Addr: "x:1"}, nil); err == nil || !strings.Contains(err.Error(), "no model") {
		t.Errorf("err %v", err)
	}
}

// TestRemoteTextSanitised: the model id and an error body come from the
// host; escapes in them reach no terminal.
func TestRemoteTextSanitised(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/models" {
			fmt.Fprint(w, `{"data":[{"id":"evil\u001b]0;pwned\u0007model"}]}`)
			return
		}
		http.Error(w, "bad \x1b[2Jthing", http.StatusBadRequest)
	}))
	defer ts.Close()
	res, err := Run(t.Context(), &tcpDialer{addr: strings.TrimPrefix(ts.URL, "http://")}, Options{Addr: "x:1", Requests: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(res.Model+res.FirstError, "\x1b\x07") || res.Errors != 1 {
		t.Errorf("remote text not sanitised: model %q, error %q", res.Model, res.FirstError)
	}
}
