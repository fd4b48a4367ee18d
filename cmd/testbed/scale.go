package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/fleet"
	"github.com/bringup-dev/bringup/remote/startup/corpus"
	"github.com/bringup-dev/bringup/remote/testkit/scalerig"
	"github.com/bringup-dev/bringup/remote/vlogs"
	"github.com/bringup-dev/bringup/ui"
)

// scaleResult is `testbed scale`'s JSON summary.
type scaleResult struct {
	Hosts     int     `json:"hosts"`
	Failing   int     `json:"failing"`
	Entries   int     `json:"entries_stored"` // before the console opens
	LoadStart float64 `json:"load_start"`
	LoadEnd   float64 `json:"load_end"`
	// InsertS is the backlog's insert into the store (first run).
	InsertS float64 `json:"insert_s"`
	// TableS is a fresh console's start to every host's final state
	// (serving, or failed with its settled cause) from the backlog.
	TableS float64 `json:"table_s"`
	// TableCPUS is this process's CPU time over TableS; TableReadMiB what
	// the console read from the store by then.
	TableCPUS    float64 `json:"table_cpu_s"`
	TableReadMiB float64 `json:"table_read_mib"`
	// TableVLCPUS is victoria-logs' CPU time over TableS; TableQueries
	// the plain queries (catch-up pages, the starts, sweeps) by then and
	// TableQueryS their time from request to the response's end.
	TableVLCPUS  float64 `json:"table_victorialogs_cpu_s"`
	TableQueries int     `json:"table_queries"`
	TableQueryS  float64 `json:"table_query_s"`
	// Steady: quiet window, every host in its final state.
	SteadyS      float64 `json:"steady_window_s"`
	SteadyCPUPct float64 `json:"steady_cpu_pct"`
	SteadyRSSMiB float64 `json:"steady_rss_mib"`
	VLCPUPct     float64 `json:"victorialogs_cpu_pct"`
	VLRSSMiB     float64 `json:"victorialogs_rss_mib"`
	Batches      int     `json:"steady_batches"`
	// Console at 200×60: a frame (View) and a key's answer (its Update
	// and the frame after it), p50/p99 ms, while quiet.
	Frame Dist `json:"frame_ms"`
	Key   Dist `json:"key_ms"`
	// Second run (every unit started again, staggered over the window,
	// the console running): time to cause from the failure's journal
	// timestamp to the fleet's batch with its settled cause.
	WindowS     float64 `json:"window_s"`
	Cause       Dist    `json:"time_to_cause_ms"`
	CausesSeen  int     `json:"causes_seen"`
	CausesRight int     `json:"causes_right"`
	// CauseMisses are the logs whose settled cause was not the corpus's.
	CauseMisses map[string]string `json:"cause_misses,omitempty"`
	LiveFrame   Dist              `json:"live_frame_ms"`
	LiveCPUPct  float64           `json:"live_cpu_pct"`
	LiveRSSMiB  float64           `json:"live_rss_mib"`
}

// Dist is p50/p99/max in milliseconds and the count.
type Dist struct {
	N   int     `json:"n"`
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

func distOf(ds []time.Duration) Dist {
	if len(ds) == 0 {
		return Dist{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	return Dist{N: len(s), P50: ms(s[len(s)/2]), P99: ms(s[min(len(s)-1, len(s)*99/100)]), Max: ms(s[len(s)-1])}
}

func scale(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("scale", flag.ContinueOnError)
	fs.SetOutput(stderr)
	n := fs.Int("hosts", 1000, "how many hosts the store is fed")
	quiet := fs.Duration("quiet", 20*time.Second, "steady-state window")
	window := fs.Duration("window", 60*time.Second, "the second run's starts are spread over this")
	keep := fs.String("dir", "", "store data directory (default a temporary one, removed)")
	out := fs.String("o", "", "write the JSON summary here")
	limit := fs.Duration("limit", 3*time.Minute, "how long a run may take to a full table")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole run here")
	if err := fs.Parse(args); err != nil {
		return err
	}
	logf := func(format string, a ...any) { fmt.Fprintf(stderr, "scale: "+format+"\n", a...) }
	if *cpuProfile != "" {
		pf, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer pf.Close()
		if err := pprof.StartCPUProfile(pf); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	r := scaleResult{Hosts: *n, LoadStart: scalerig.LoadAvg()}
	logs, err := corpus.ReadAll(corpus.Dir())
	if err != nil {
		return err
	}
	bin, err := scalerig.StoreBinary()
	if err != nil {
		return err
	}
	dir := *keep
	if dir == "" {
		if dir, err = os.MkdirTemp("", "bringup-scale-"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	}
	store, err := scalerig.StartStore(ctx, bin, dir)
	if err != nil {
		return err
	}
	defer store.Stop()
	logf("victoria-logs at %s, pid %d", store.URL, store.PID())

	// The store's history when the console opens: every host started
	// 100 minutes ago (run 0) and, all but one host in a hundred, again
	// 10 minutes ago (run 1), each start spread over 5 minutes; the
	// hundredth host is still in its old run. A full table needs each
	// host's current run, not all of it.
	now := time.Now()
	old, err := scalerig.Plan(logs, scalerig.PlanOptions{Hosts: *n, First: now.Add(-100 * time.Minute), Stagger: 5 * time.Minute / time.Duration(*n)})
	if err != nil {
		return err
	}
	recent, err := scalerig.Plan(logs, scalerig.PlanOptions{Hosts: *n, First: now.Add(-10 * time.Minute), Stagger: 5 * time.Minute / time.Duration(*n), Run: 1})
	if err != nil {
		return err
	}
	first := make([]scalerig.Host, *n)
	hist := slices.Clone(old)
	for i := range first {
		first[i] = recent[i]
		if i%100 == 99 {
			first[i] = old[i]
			continue
		}
		hist = append(hist, recent[i])
	}
	entries := scalerig.All(hist)
	r.Entries = len(entries)
	for _, h := range first {
		if h.Fail {
			r.Failing++
		}
	}
	t0 := time.Now()
	if err := scalerig.Backlog(ctx, store, entries); err != nil {
		return err
	}
	r.InsertS = time.Since(t0).Seconds()
	logf("backlog: %d entries of %d hosts (%d failing) in %.2f s", len(entries), *n, r.Failing, r.InsertS)

	// The console: the store fleet as `bringup` builds it for source
	// victorialogs, and the console model on it at 200×60, its output
	// discarded, every frame and key timed.
	read := &countingTransport{base: http.DefaultTransport}
	src, err := vlogs.New(vlogs.Options{URL: store.URL, Unit: scalerig.Unit, Client: &http.Client{Transport: read}})
	if err != nil {
		return err
	}
	specs := make([]fleet.HostSpec, *n)
	for i, h := range first {
		specs[i] = fleet.HostSpec{Driver: src.Host(h.Name, nil), Unit: scalerig.Unit, Engine: h.Engine}
	}
	debug.FreeOSMemory()
	cpu0, _ := scalerig.ProcCPU(0)
	vlTable0, _ := scalerig.ProcCPU(store.PID())
	t0 = time.Now()
	f, err := fleet.New(specs, fleet.Options{Kernels: kernels.DefaultCatalog(), ReadOnly: true, Observers: []fleet.Observer{fleet.KernelCheck()},
		Deltas: true}) // as the console runs it (console.Run)
	if err != nil {
		return err
	}
	w := newWatcher(first)
	tee := &teeSource{Fleet: f, out: make(chan remote.Batch), watch: w}
	fctx, stopFleet := context.WithCancel(ctx)
	defer stopFleet()
	var wg sync.WaitGroup
	wg.Go(func() { _ = f.Run(fctx) })
	wg.Go(tee.pump)
	tm := &timedModel{inner: ui.New(tee, ui.Options{Title: "scale", Kernels: kernels.DefaultCatalog()})}
	p := tea.NewProgram(tm, tea.WithContext(fctx), tea.WithInput(nil), tea.WithOutput(io.Discard), tea.WithWindowSize(200, 60))
	wg.Go(func() { _, _ = p.Run() })
	defer func() {
		stopFleet()
		wg.Wait()
	}()

	if err := w.waitAll(ctx, *limit, logf); err != nil {
		return fmt.Errorf("first run: %w", err)
	}
	r.TableS = time.Since(t0).Seconds()
	cpu1, _ := scalerig.ProcCPU(0)
	r.TableCPUS = (cpu1 - cpu0).Seconds()
	r.TableReadMiB = float64(read.n.Load()) / (1 << 20)
	vlTable1, _ := scalerig.ProcCPU(store.PID())
	r.TableVLCPUS = (vlTable1 - vlTable0).Seconds()
	r.TableQueries, r.TableQueryS = read.queries()
	logf("full table: %.2f s (%.2f s of CPU; victoria-logs %.2f s), %.1f MiB read from the store; %d queries answered in %.2f s",
		r.TableS, r.TableCPUS, r.TableVLCPUS, r.TableReadMiB, r.TableQueries, r.TableQueryS)

	// Quiet: CPU and RSS, and the console's frames and keys.
	time.Sleep(3 * time.Second)
	debug.FreeOSMemory()
	tm.reset()
	w.batches.Store(0)
	vl0, _ := scalerig.ProcCPU(store.PID())
	cpu0, _ = scalerig.ProcCPU(0)
	t0 = time.Now()
	keys := []string{"j", "j", "k", "G", "g", "j"}
	for i := 0; time.Since(t0) < *quiet; i++ {
		k := keys[i%len(keys)]
		p.Send(tea.KeyPressMsg{Code: rune(k[0]), Text: k})
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
	wall := time.Since(t0)
	cpu1, _ = scalerig.ProcCPU(0)
	vl1, _ := scalerig.ProcCPU(store.PID())
	r.SteadyS = wall.Seconds()
	r.SteadyCPUPct = 100 * (cpu1 - cpu0).Seconds() / wall.Seconds()
	r.VLCPUPct = 100 * (vl1 - vl0).Seconds() / wall.Seconds()
	r.SteadyRSSMiB, _ = scalerig.ProcRSSMiB(0)
	r.VLRSSMiB, _ = scalerig.ProcRSSMiB(store.PID())
	r.Batches = int(w.batches.Load())
	r.Frame, r.Key = tm.dists()
	logf("steady %.0f s: console %.2f %% of a core, RSS %.1f MiB; victoria-logs %.2f %%, %.1f MiB; frame p50/p99 %.2f/%.2f ms, key %.2f/%.2f ms",
		r.SteadyS, r.SteadyCPUPct, r.SteadyRSSMiB, r.VLCPUPct, r.VLRSSMiB, r.Frame.P50, r.Frame.P99, r.Key.P50, r.Key.P99)

	// The second run: every unit started again over the window, fed as
	// its time comes, the console open.
	start := time.Now().Add(2 * time.Second)
	second, err := scalerig.Plan(logs, scalerig.PlanOptions{Hosts: *n, First: start, Stagger: *window / time.Duration(*n), Run: 2})
	if err != nil {
		return err
	}
	r.WindowS = window.Seconds()
	w.expect(second, 2)
	tm.reset()
	cpu0, _ = scalerig.ProcCPU(0)
	t0 = time.Now()
	feedErr := make(chan error, 1)
	go func() { feedErr <- scalerig.Live(fctx, store, scalerig.All(second), 250*time.Millisecond, time.Now) }()
	if err := w.waitAll(ctx, *window+*limit, logf); err != nil {
		return fmt.Errorf("second run: %w", err)
	}
	if err := <-feedErr; err != nil {
		return err
	}
	wall = time.Since(t0)
	cpu1, _ = scalerig.ProcCPU(0)
	r.LiveCPUPct = 100 * (cpu1 - cpu0).Seconds() / wall.Seconds()
	r.LiveRSSMiB, _ = scalerig.ProcRSSMiB(0)
	r.LiveFrame, _ = tm.dists()
	r.Cause, r.CausesSeen, r.CausesRight, r.CauseMisses = w.causes()
	r.LoadEnd = scalerig.LoadAvg()
	logf("second run over %s: time to cause p50/p99/max %.0f/%.0f/%.0f ms (%d failures, %d with the corpus's cause); console %.2f %% of a core while it ran, RSS %.1f MiB; frame p50/p99 %.2f/%.2f ms",
		*window, r.Cause.P50, r.Cause.P99, r.Cause.Max, r.CausesSeen, r.CausesRight, r.LiveCPUPct, r.LiveRSSMiB, r.LiveFrame.P50, r.LiveFrame.P99)
	logf("load average %.1f → %.1f", r.LoadStart, r.LoadEnd)
	b, _ := json.MarshalIndent(r, "", "  ")
	if *out != "" {
		if err := os.WriteFile(*out, b, 0o644); err != nil {
			return err
		}
	}
	_, err = fmt.Fprintln(stdout, string(b))
	return err
}

// countingTransport counts the response bytes the console reads.
type countingTransport struct {
	base http.RoundTripper
	n    atomic.Int64
	mu   sync.Mutex
	nq   int
	tq   time.Duration
}

func (c *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	t0 := time.Now()
	resp, err := c.base.RoundTrip(req)
	if err == nil {
		resp.Body = &countingBody{ReadCloser: resp.Body, n: &c.n}
		if req.URL.Path == "/select/logsql/query" {
			resp.Body.(*countingBody).done = func() { c.query(time.Since(t0)) }
		}
	}
	return resp, err
}

func (c *countingTransport) query(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nq++
	c.tq += d
}

// queries are the plain queries answered so far and their total time.
func (c *countingTransport) queries() (int, float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nq, c.tq.Seconds()
}

type countingBody struct {
	io.ReadCloser
	n    *atomic.Int64
	done func()
	once sync.Once
}

func (b *countingBody) Close() error {
	if b.done != nil {
		b.once.Do(b.done)
	}
	return b.ReadCloser.Close()
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}
