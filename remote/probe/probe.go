// Package probe checks that a host's inference service answers: an HTTP GET
// of its health path (and, if asked, a one-token completion) sent through an
// SSH direct-tcpip channel, so the service port never has to be reachable
// from this machine. A probe result is one piece of the evidence for
// "serving"; the unit being active and the ready line being seen are the
// others, and the phase engine combines them.
package probe

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/sshx"
	"github.com/bringup-dev/bringup/remote/timegrid"
)

// Dialer opens a TCP connection as seen from the host. *sshx.Conn is one.
type Dialer interface {
	DialTCP(ctx context.Context, addr string) (net.Conn, error)
}

// Defaults of Options.
const (
	DefaultAddr    = "127.0.0.1:30000"
	DefaultPath    = "/health"
	DefaultTimeout = 3 * time.Second
	// DefaultInterval is the base interval of Run.
	DefaultInterval = 2 * time.Second
	// CompletionPath is the OpenAI-compatible route the completion probe posts to.
	CompletionPath = "/v1/completions"
	// ModelsPath lists the served models; the completion probe needs a model id.
	ModelsPath = "/v1/models"
)

// maxBody caps how much of an answer is read: the service is remote and
// untrusted, and a probe needs only a status and a small JSON document.
const maxBody = 256 << 10

// Options says what to probe.
type Options struct {
	// Addr is host:port from the host's point of view (the SSH server dials
	// it); "" = DefaultAddr.
	Addr string
	// Path is the health path; "" = DefaultPath.
	Path string
	// Completion adds a one-token completion after a healthy answer: the
	// health route can be up before the model can generate.
	Completion bool
	// Model is the model id for the completion; "" = the first model that
	// GET /v1/models lists.
	Model string
	// Timeout bounds one probe (each request of it); 0 = DefaultTimeout.
	Timeout time.Duration
}

func (o Options) withDefaults() Options {
	if o.Addr == "" {
		o.Addr = DefaultAddr
	}
	if o.Path == "" {
		o.Path = DefaultPath
	}
	if !strings.HasPrefix(o.Path, "/") {
		o.Path = "/" + o.Path
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	return o
}

// Prober probes one host. It opens a new channel for every request (no
// keep-alive): a kept connection would die silently with the SSH
// connection under it, and a channel is cheap.
type Prober struct {
	opts   Options
	client *http.Client
}

// NewProber returns a Prober that reaches the service through d.
func NewProber(d Dialer, opts Options) *Prober {
	opts = opts.withDefaults()
	tr := &http.Transport{
		// The address in the URL is only a label: every dial goes to
		// opts.Addr through the SSH connection.
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return d.DialTCP(ctx, opts.Addr)
		},
		DisableKeepAlives:      true,
		Proxy:                  nil,
		ResponseHeaderTimeout:  opts.Timeout,
		MaxResponseHeaderBytes: 64 << 10,
	}
	return &Prober{opts: opts, client: &http.Client{
		Transport: tr,
		// A redirect would be followed through the same tunnel to the same
		// address; a health route that redirects is not healthy.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// Options returns the options in force, with defaults applied.
func (p *Prober) Options() Options { return p.opts }

// url builds the URL of path; the host part names the service for logs
// and Host headers only.
func (p *Prober) url(path string) string { return "http://" + p.opts.Addr + path }

// do sends one request and reads at most maxBody of the answer.
func (p *Prober) do(ctx context.Context, method, path string, body []byte) (status int, data []byte, lat time.Duration, err error) {
	ctx, cancel := context.WithTimeout(ctx, p.opts.Timeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, p.url(path), rd)
	if err != nil {
		return 0, nil, 0, fmt.Errorf("%s %s: %w", method, path, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	start := time.Now()
	resp, err := p.client.Do(req)
	if err != nil {
		return 0, nil, time.Since(start), fmt.Errorf("%s %s: %w", method, path, unwrapURL(err))
	}
	defer resp.Body.Close()
	data, err = io.ReadAll(io.LimitReader(resp.Body, maxBody))
	lat = time.Since(start)
	if err != nil {
		return resp.StatusCode, data, lat, fmt.Errorf("%s %s: read answer: %w", method, path, err)
	}
	return resp.StatusCode, data, lat, nil
}

// unwrapURL drops the *url.Error layer, whose text repeats the method and
// the URL, whose host part is only a label here.
func unwrapURL(err error) error {
	if u, ok := errors.AsType[*url.Error](err); ok && u.Err != nil {
		return u.Err
	}
	return err
}

// ok reports whether status is a success.
func ok(status int) bool { return status >= 200 && status < 300 }

// Health sends one GET of the health path.
func (p *Prober) Health(ctx context.Context) event.Probe {
	r, _ := p.health(ctx)
	return r
}

// health is Health that also returns the transport error, if any.
func (p *Prober) health(ctx context.Context) (event.Probe, error) {
	status, _, lat, err := p.do(ctx, http.MethodGet, p.opts.Path, nil)
	return result(p.opts.Path, status, lat, err), err
}

// result builds the event payload of one request.
func result(path string, status int, lat time.Duration, err error) event.Probe {
	r := event.Probe{Path: path, Status: status, Latency: lat, OK: err == nil && ok(status)}
	switch {
	case err != nil:
		r.Err = err.Error()
	case !ok(status):
		r.Err = fmt.Sprintf("%s: %d %s", path, status, http.StatusText(status))
	}
	return r
}

// Model returns the model id to complete with: Options.Model, else the
// first id GET /v1/models lists.
func (p *Prober) Model(ctx context.Context) (string, event.Probe) {
	if p.opts.Model != "" {
		return p.opts.Model, event.Probe{Path: ModelsPath, OK: true}
	}
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	r := p.call(ctx, http.MethodGet, ModelsPath, nil, &list, func() string {
		if len(list.Data) == 0 || list.Data[0].ID == "" {
			return "no model listed"
		}
		return ""
	})
	if !r.OK {
		return "", r
	}
	return list.Data[0].ID, r
}

// Complete asks model for one token of "ping" and returns the text of the
// first choice. The probe is OK when the answer is 2xx and has a choice.
func (p *Prober) Complete(ctx context.Context, model string) (string, event.Probe) {
	body, err := json.Marshal(map[string]any{"model": model, "prompt": "ping", "max_tokens": 1})
	if err != nil {
		return "", event.Probe{Path: CompletionPath, Err: err.Error()}
	}
	var ans struct {
		Choices []struct {
			Text string `json:"text"`
		} `json:"choices"`
	}
	r := p.call(ctx, http.MethodPost, CompletionPath, body, &ans, func() string {
		if len(ans.Choices) == 0 {
			return "no choices in the answer"
		}
		return ""
	})
	if !r.OK {
		return "", r
	}
	return ans.Choices[0].Text, r
}

// call sends one request with a JSON answer, decodes the answer into v and
// asks check what is missing from it ("" = nothing): a 2xx answer the
// probe cannot use is a failed probe.
func (p *Prober) call(ctx context.Context, method, path string, body []byte, v any, check func() string) event.Probe {
	status, data, lat, err := p.do(ctx, method, path, body)
	r := result(path, status, lat, err)
	if !r.OK {
		return r
	}
	if err := json.Unmarshal(data, v); err != nil {
		r.OK, r.Err = false, fmt.Sprintf("%s: decode answer: %v", path, err)
	} else if msg := check(); msg != "" {
		r.OK, r.Err = false, path+": "+msg
	}
	return r
}

// Probe runs one probe: the health GET, then, with Options.Completion and
// a healthy answer, the completion (after looking up the model). The
// result is the health answer, or the first failing step of the
// completion, or the completion; its Latency is the sum of the steps.
func (p *Prober) Probe(ctx context.Context) event.Probe {
	r, _ := p.probe(ctx)
	return r
}

// probe is Probe that also returns the health request's transport error.
func (p *Prober) probe(ctx context.Context) (event.Probe, error) {
	h, err := p.health(ctx)
	if err != nil {
		return h, err
	}
	if !h.OK || !p.opts.Completion {
		return h, nil
	}
	total := h.Latency
	model, m := p.Model(ctx)
	total += m.Latency
	if !m.OK {
		m.Latency = total
		return m, nil
	}
	_, c := p.Complete(ctx, model)
	c.Latency = total + c.Latency
	return c, nil
}

// Probe runs one probe of the service behind d. See Prober.Probe.
func Probe(ctx context.Context, d Dialer, opts Options) event.Probe {
	return NewProber(d, opts).Probe(ctx)
}

// Intervals derived from Run's base interval: fast while the service is
// not answering yet (readiness should be seen soon after it happens), slow
// once it is (a healthy service need not be polled hard) and while the
// host's connection is down (the connection has its own backoff and its
// own events), and relaxed while the host is steady and answers.
func fastInterval(base time.Duration) time.Duration    { return max(base/4, 100*time.Millisecond) }
func slowInterval(base time.Duration) time.Duration    { return base * 5 / 2 }
func relaxedInterval(base time.Duration) time.Duration { return base * 15 }

// nextInterval is how long Run waits after a probe: ok is its answer,
// down says it found the SSH connection down, relaxed says the host is
// steady and no one has its view open (Pacing.Relaxed). A relaxed host
// that answers is probed every 15×base (30 s by default): its unit's
// state still comes at once from systemd's signals, so only a service
// that hangs while its unit stays active is seen later. A relaxed host
// that does not answer (stopped, failed) is probed at the slow interval,
// not the fast one: nothing is starting there.
func nextInterval(base time.Duration, ok, down, relaxed bool) time.Duration {
	switch {
	case relaxed && ok:
		return relaxedInterval(base)
	case ok, down, relaxed:
		return slowInterval(base)
	}
	return fastInterval(base)
}

// Pacing says whether Run may probe at its relaxed interval.
type Pacing struct {
	// Relaxed reports whether the host is steady and not looked at.
	Relaxed func() bool
	// Changed receives when Relaxed may have changed; nil: never. Run
	// probes at once then, so a host that starts again is probed fast.
	Changed <-chan struct{}
}

// Run probes every interval until ctx ends or emit returns false, emitting
// one KindProbe event per probe with Time set to when the answer came.
// interval is the base (0 = DefaultInterval, 2 s): a probe that was not OK
// is repeated after interval/4 (500 ms by default), an OK one after
// 2.5×interval (5 s), as is one that found the SSH connection down. Failures are events, not errors: Run returns nil
// when emit refuses, and ctx's error when ctx ends.
func Run(ctx context.Context, d Dialer, opts Options, host string, interval time.Duration, emit func(event.Event) bool) error {
	return RunPaced(ctx, d, opts, host, interval, Pacing{}, emit)
}

// RunPaced is Run that probes less while pace says the host is relaxed
// (see nextInterval).
func RunPaced(ctx context.Context, d Dialer, opts Options, host string, interval time.Duration, pace Pacing, emit func(event.Event) bool) error {
	if interval <= 0 {
		interval = DefaultInterval
	}
	relaxed := func() bool { return pace.Relaxed != nil && pace.Relaxed() }
	p := NewProber(d, opts)
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		case <-pace.Changed:
			t.Stop()
		}
		r, err := p.probe(ctx)
		if ctx.Err() != nil {
			// The probe was cut short by our own cancellation, not by the host.
			return ctx.Err()
		}
		now := time.Now()
		if !emit(event.Event{Host: host, Kind: event.KindProbe, Time: now, Seen: now, Probe: &r}) {
			return nil
		}
		wait := nextInterval(interval, r.OK, errors.Is(err, sshx.ErrNotConnected), relaxed())
		if wait == relaxedInterval(interval) {
			// A steady host's probe may come a second late: on
			// timegrid's instants, with the other hosts' due then.
			wait = timegrid.Align(time.Now(), wait, timegrid.For(wait))
		}
		t.Reset(wait)
	}
}
