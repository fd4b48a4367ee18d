// Package bench is `bringup bench`: a bounded smoke load on one serving
// host's OpenAI-compatible /v1/completions (both engines serve it),
// through the connection the readiness probe uses (a Dialer: an SSH
// direct-tcpip channel per request). It sends exactly Requests requests,
// at most Concurrency at a time, streamed, and measures requests/s,
// output tokens/s, the time to the first token and the latency (p50,
// p99), and the errors.
package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bringup-dev/bringup/remote/benchstat"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/sanitize"
)

// Dialer opens a TCP connection as seen from the host (probe.Dialer).
type Dialer interface {
	DialTCP(ctx context.Context, addr string) (net.Conn, error)
}

// Tunnel is a Dialer that knows the service's address: a real host's
// driver (remote/live), whose SSH connection the probe uses too.
type Tunnel interface {
	Dialer
	// ProbeAddr is the service's address as seen from the host.
	ProbeAddr() string
}

// Defaults of Options.
const (
	DefaultRequests    = event.BenchRequests
	DefaultConcurrency = event.BenchConcurrency
	DefaultMaxTokens   = event.BenchMaxTokens
	DefaultPrompt      = "The capital of France is"
	DefaultTimeout     = 2 * time.Minute
	// Path is the route every request posts to.
	Path = "/v1/completions"
	// maxBody caps what one answer may send: the service is remote and
	// untrusted.
	maxBody = 4 << 20
)

// Options shape a smoke load.
type Options struct {
	Addr        string // host:port as seen from the host, e.g. 127.0.0.1:30000
	Requests    int    // exactly this many requests; 0: DefaultRequests
	Concurrency int    // at most this many at a time; 0: DefaultConcurrency
	MaxTokens   int    // max_tokens of each; 0: DefaultMaxTokens
	Prompt      string // "": DefaultPrompt
	// Model is the model id; "": the first GET /v1/models lists.
	Model string
	// Timeout bounds one request; 0: DefaultTimeout.
	Timeout time.Duration
}

func (o Options) withDefaults() Options {
	if o.Requests <= 0 {
		o.Requests = DefaultRequests
	}
	if o.Concurrency <= 0 {
		o.Concurrency = DefaultConcurrency
	}
	o.Concurrency = min(o.Concurrency, o.Requests)
	if o.MaxTokens <= 0 {
		o.MaxTokens = DefaultMaxTokens
	}
	if o.Prompt == "" {
		o.Prompt = DefaultPrompt
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	return o
}

// Result is what a smoke load measured: the event package's Bench, which
// a bench run through the fleet's actions carries up.
type Result = event.Bench

// one is what one request measured.
type one struct {
	ttft, latency time.Duration
	tokens        int
	err           error
}

// Run sends the load and returns what it measured; progress (may be nil)
// is called after each request with the count done. It stops sending when
// ctx ends and returns what the requests sent by then measured. An error
// is returned only when the load could not start (no model to ask for).
func Run(ctx context.Context, d Dialer, opts Options, progress func(done, total int)) (Result, error) {
	opts = opts.withDefaults()
	client := &http.Client{Transport: &http.Transport{
		DialContext:            func(ctx context.Context, _, _ string) (net.Conn, error) { return d.DialTCP(ctx, opts.Addr) },
		DisableKeepAlives:      true, // a channel per request, as the probe does
		Proxy:                  nil,
		MaxResponseHeaderBytes: 64 << 10,
	}, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	if opts.Model == "" {
		m, err := model(ctx, client, opts)
		if err != nil {
			return Result{}, err
		}
		opts.Model = m
	}
	body, err := json.Marshal(map[string]any{"model": opts.Model, "prompt": opts.Prompt, "max_tokens": opts.MaxTokens,
		"temperature": 0, "stream": true, "stream_options": map[string]any{"include_usage": true}})
	if err != nil {
		return Result{}, fmt.Errorf("request body: %w", err)
	}
	var (
		next    atomic.Int64 // requests handed out: never more than opts.Requests
		done    atomic.Int64
		mu      sync.Mutex
		results []one
		wg      sync.WaitGroup
	)
	start := time.Now()
	for range opts.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil && next.Add(1) <= int64(opts.Requests) {
				r := request(ctx, client, opts, body)
				if ctx.Err() != nil && r.err != nil {
					return // stopped, not failed
				}
				mu.Lock()
				results = append(results, r)
				mu.Unlock()
				n := done.Add(1)
				if progress != nil {
					progress(int(n), opts.Requests)
				}
			}
		}()
	}
	wg.Wait()
	res := summarise(results, time.Since(start))
	res.Model, res.Concurrency = opts.Model, opts.Concurrency
	res.Interrupted = len(results) < opts.Requests
	return res, nil
}

// summarise folds the requests' measurements over the load's duration
// (benchstat's fold, shared with the simulated hosts' load).
func summarise(rs []one, took time.Duration) Result {
	samples := make([]benchstat.Sample, len(rs))
	for i, r := range rs {
		samples[i] = benchstat.Sample{TTFT: r.ttft, Latency: r.latency, Tokens: r.tokens}
		if r.err != nil {
			// The host's words may be in it (an SSH channel's rejection,
			// an answer's body): sanitised, as they enter.
			samples[i].Err = sanitize.String(r.err.Error())
		}
	}
	return benchstat.Summarise(samples, took)
}

// Percentile is the nearest-rank p-th percentile of ds; 0 for none.
func Percentile(ds []time.Duration, p int) time.Duration { return benchstat.Percentile(ds, p) }

// model asks the service which model it serves.
func model(ctx context.Context, c *http.Client, opts Options) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+opts.Addr+"/v1/models", nil)
	if err != nil {
		return "", fmt.Errorf("GET /v1/models: %w", err)
	}
	resp, err := c.Do(req)
	if err != nil {
		return "", fmt.Errorf("GET /v1/models: %w", err)
	}
	defer resp.Body.Close()
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET /v1/models: status %d", resp.StatusCode)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxBody)).Decode(&list); err != nil {
		return "", fmt.Errorf("GET /v1/models: %w", err)
	}
	if len(list.Data) == 0 || list.Data[0].ID == "" {
		return "", errors.New("GET /v1/models: no model listed")
	}
	// Remote text: it is printed, so it passes the one sanitiser here,
	// where it enters.
	return sanitize.String(list.Data[0].ID), nil
}

// chunk is the part of a streamed completion chunk bench reads.
type chunk struct {
	Choices []struct {
		Text string `json:"text"`
	} `json:"choices"`
	Usage *struct {
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
}

// request sends one streamed completion and times it.
func request(ctx context.Context, c *http.Client, opts Options, body []byte) one {
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+opts.Addr+Path, bytes.NewReader(body))
	if err != nil {
		return one{err: fmt.Errorf("POST %s: %w", Path, err)}
	}
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		return one{err: fmt.Errorf("POST %s: %w", Path, err)}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return one{err: fmt.Errorf("POST %s: status %d: %s", Path, resp.StatusCode, strings.TrimSpace(string(msg)))}
	}
	var r one
	chunks, usage := 0, -1
	sc := bufio.NewScanner(io.LimitReader(resp.Body, maxBody))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data:")
		if !ok {
			continue
		}
		data = strings.TrimSpace(data)
		if data == "[DONE]" {
			break
		}
		var ch chunk
		if err := json.Unmarshal([]byte(data), &ch); err != nil {
			return one{err: fmt.Errorf("POST %s: chunk: %w", Path, err)}
		}
		if ch.Usage != nil {
			usage = ch.Usage.CompletionTokens
		}
		for _, c := range ch.Choices {
			if c.Text == "" {
				continue
			}
			if chunks == 0 {
				r.ttft = time.Since(start)
			}
			chunks++
		}
	}
	if err := sc.Err(); err != nil {
		return one{err: fmt.Errorf("POST %s: read stream: %w", Path, err)}
	}
	r.latency = time.Since(start)
	r.tokens = chunks
	if usage >= 0 {
		r.tokens = usage
	}
	if chunks == 0 {
		return one{err: fmt.Errorf("POST %s: the stream held no token", Path)}
	}
	return r
}
