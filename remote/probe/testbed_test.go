package probe

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/testkit/tbssh"
	"github.com/bringup-dev/bringup/remote/testkit/testbed"
)

// TestProbeOnTestbed probes infersim on a real host through a real SSH
// connection: refused before the service starts, 503 while it loads, 200
// once ready, and a one-token completion after that.
func TestProbeOnTestbed(t *testing.T) {
	tb := testbed.Start(t, 1)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()

	conn := tbssh.Connect(t, tb, "gpu1")

	// Nothing listens yet: the SSH server's connect fails.
	if r := Probe(ctx, conn, Options{}); r.OK || r.Status != 0 || r.Err == "" {
		t.Fatalf("before start: %+v, want a refused connection", r)
	} else {
		t.Logf("before start: %s (%v)", r.Err, r.Latency)
	}

	events := make(chan event.Event, 256)
	runCtx, stopRun := context.WithCancel(ctx)
	runDone := make(chan error, 1)
	go func() {
		runDone <- Run(runCtx, conn, Options{}, "gpu1", 0, func(e event.Event) bool {
			select {
			case events <- e:
				return true
			case <-runCtx.Done():
				return false
			}
		})
	}()
	if out, err := tb.Run(ctx, "gpu1", "systemctl start sglang"); err != nil {
		t.Fatalf("start sglang: %v: %s", err, out)
	}
	var seen503, seen200 bool
	for !seen200 {
		select {
		case e := <-events:
			p := e.Probe
			if e.Host != "gpu1" || p == nil {
				t.Fatalf("bad event %+v", e)
			}
			switch {
			case p.Status == 503:
				seen503 = true
			case p.OK:
				seen200 = true
				t.Logf("ready: %d in %v", p.Status, p.Latency)
			case p.Status != 0:
				t.Fatalf("unexpected answer %+v", p)
			}
		case <-ctx.Done():
			t.Fatalf("no 200 from /health: %v", ctx.Err())
		}
	}
	stopRun()
	if err := <-runDone; !errors.Is(err, context.Canceled) {
		t.Errorf("Run = %v, want context.Canceled", err)
	}
	if !seen503 {
		t.Errorf("never saw 503 while the service loaded")
	}

	p := NewProber(conn, Options{Completion: true})
	model, m := p.Model(ctx)
	if !m.OK || model != testbed.ModelPath {
		t.Fatalf("model = %q, %+v; want %q", model, m, testbed.ModelPath)
	}
	text, c := p.Complete(ctx, model)
	if !c.OK || strings.TrimSpace(text) == "" || len(strings.Fields(text)) != 1 {
		t.Errorf("completion = %q, %+v; want one token", text, c)
	}
	if r := p.Probe(ctx); !r.OK || r.Path != CompletionPath {
		t.Errorf("completion probe: %+v, want OK on %s", r, CompletionPath)
	} else {
		t.Logf("completion probe: %v", r.Latency)
	}
}
