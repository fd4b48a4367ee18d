package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/fleet"
	"github.com/bringup-dev/bringup/remote/startup"
	"github.com/bringup-dev/bringup/remote/testkit/scalerig"
)

// teeSource is the fleet as the console's Source, its batches looked at
// by the watcher on their way to the console.
type teeSource struct {
	*fleet.Fleet
	out   chan remote.Batch
	watch *watcher
	// hosts is the snapshot after the last batch, for the watcher: a
	// batch of the states taken anew (fleet.Options.Deltas) is put in
	// place in it, once it is the tee's own (own).
	hosts []remote.HostState
	own   bool
}

// Updates is the console's copy of the fleet's batches.
func (s *teeSource) Updates() <-chan remote.Batch { return s.out }

// pump hands each batch to the watcher and then the console, until the
// fleet closes its channel.
func (s *teeSource) pump() {
	defer close(s.out)
	for b := range s.Fleet.Updates() {
		s.keep(b)
		seen := b
		seen.Hosts = s.hosts
		s.watch.see(seen, time.Now())
		s.out <- b
	}
}

// keep takes b into the tee's snapshot.
func (s *teeSource) keep(b remote.Batch) {
	if b.Hosts != nil || !b.Delta || len(b.States) != len(b.Taken) {
		s.hosts, s.own = b.Hosts, false
		return
	}
	if !s.own {
		s.hosts, s.own = slices.Clone(s.hosts), true
	}
	for k, i := range b.Taken {
		s.hosts[i] = b.States[k]
	}
}

// watcher records when each host reached its final state: serving, or
// failed with its cause settled.
type watcher struct {
	batches atomic.Int64
	mu      sync.Mutex
	want    map[string]scalerig.Host
	order   []scalerig.Host // want in the fleet's order
	isDone  []bool          // by position in order
	done    map[string]time.Time
	diag    map[string]string
	all     chan struct{}
	run     int // the startup.Startup.Run the hosts must have reached (0: any)
}

func newWatcher(hosts []scalerig.Host) *watcher {
	w := &watcher{}
	w.expect(hosts, 0)
	return w
}

// expect starts waiting for hosts' final states anew, in run minRun or
// later (0: any).
func (w *watcher) expect(hosts []scalerig.Host, minRun int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.want = map[string]scalerig.Host{}
	for _, h := range hosts {
		w.want[h.Name] = h
	}
	w.order, w.isDone = hosts, make([]bool, len(hosts))
	w.done, w.diag, w.all = map[string]time.Time{}, map[string]string{}, make(chan struct{})
	w.run = minRun
}

func (w *watcher) see(b remote.Batch, at time.Time) {
	w.batches.Add(1)
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.done) == len(w.want) {
		return
	}
	for i := range b.Hosts {
		h := &b.Hosts[i]
		// The fleet keeps its hosts in the specs' order, the plan's:
		// looked up by position, the watcher costs the console's
		// process little (a map lookup per host per batch was 6 % of
		// its CPU at 10 000 hosts).
		var want scalerig.Host
		inOrder := i < len(w.order) && w.order[i].Name == h.Name
		if inOrder {
			if w.isDone[i] {
				continue
			}
			want = w.order[i]
		} else if want = w.want[h.Name]; want.Name == "" {
			continue
		} else if _, ok := w.done[h.Name]; ok {
			continue
		}
		st := h.Startup
		if st.Run < w.run {
			continue
		}
		final := false
		if want.Fail {
			final = st.Phase == startup.Failed && h.Settled() && st.Diag != nil
		} else {
			final = st.Phase == startup.Serving
		}
		if final {
			if inOrder {
				w.isDone[i] = true
			}
			w.done[h.Name] = at
			if st.Diag != nil {
				w.diag[h.Name] = st.Diag.Cause
			}
		}
	}
	if len(w.done) == len(w.want) {
		close(w.all)
	}
}

// waitAll waits for every host's final state, saying how far it is
// every 10 s through logf.
func (w *watcher) waitAll(ctx context.Context, limit time.Duration, logf func(string, ...any)) error {
	w.mu.Lock()
	all := w.all
	w.mu.Unlock()
	progress := time.NewTicker(10 * time.Second)
	defer progress.Stop()
	deadline := time.After(limit)
	for {
		select {
		case <-all:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-progress.C:
			w.mu.Lock()
			logf("%d of %d hosts in their final state, %d batches", len(w.done), len(w.want), w.batches.Load())
			w.mu.Unlock()
		case <-deadline:
			w.mu.Lock()
			defer w.mu.Unlock()
			return fmt.Errorf("%d of %d hosts in their final state after %s", len(w.done), len(w.want), limit)
		}
	}
}

// causes are the failed hosts' times to cause (their settled cause's
// batch less the failure's journal timestamp), how many, how many named
// the corpus log's cause, and for the logs that did not, "want → got".
func (w *watcher) causes() (Dist, int, int, map[string]string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var ds []time.Duration
	right := 0
	misses := map[string]string{}
	for name, h := range w.want {
		if !h.Fail {
			continue
		}
		at, ok := w.done[name]
		if !ok {
			continue
		}
		ds = append(ds, at.Sub(h.FailedAt))
		if w.diag[name] == h.Cause {
			right++
		} else {
			misses[h.Log] = h.Cause + " → " + w.diag[name]
		}
	}
	return distOf(ds), len(ds), right, misses
}

// timedModel times the console model: every frame (View) and every key's
// answer (the key's Update and the frame after it).
type timedModel struct {
	inner  tea.Model
	mu     sync.Mutex
	frames []time.Duration
	keys   []time.Duration
	keyUpd time.Duration
	onKey  bool
}

func (t *timedModel) Init() tea.Cmd { return t.inner.Init() }

func (t *timedModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	s := time.Now()
	_, cmd := t.inner.Update(msg)
	if _, ok := msg.(tea.KeyPressMsg); ok {
		t.mu.Lock()
		t.keyUpd, t.onKey = time.Since(s), true
		t.mu.Unlock()
	}
	return t, cmd
}

func (t *timedModel) View() tea.View {
	s := time.Now()
	v := t.inner.View()
	d := time.Since(s)
	t.mu.Lock()
	t.frames = append(t.frames, d)
	if t.onKey {
		t.keys = append(t.keys, t.keyUpd+d)
		t.onKey = false
	}
	t.mu.Unlock()
	return v
}

func (t *timedModel) reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.frames, t.keys = nil, nil
}

func (t *timedModel) dists() (Dist, Dist) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return distOf(t.frames), distOf(t.keys)
}
