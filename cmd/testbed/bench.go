package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strings"

	"github.com/bringup-dev/bringup/remote/testkit/fleetbench"
)

// bench runs remote/testkit/fleetbench and prints its figures: a table, and the
// JSON summary to -o.
func bench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o fleetbench.Options
	fs.IntVar(&o.Hosts, "hosts", 64, "how many test hosts to boot")
	fs.DurationVar(&o.Quiet, "quiet", fleetbench.DefaultQuiet, "steady-state window, every host serving")
	fs.IntVar(&o.CatchupLines, "catchup-lines", fleetbench.DefaultCatchupLines, "lines in the catch-up run")
	fs.IntVar(&o.CatchupRuns, "catchup-runs", fleetbench.DefaultCatchupRuns, "reads of the catch-up run by each side (the median counts)")
	fs.StringVar(&o.Testbed.CacheDir, "cache", "", "image cache (default the testbed's)")
	fs.StringVar(&o.Testbed.Infersim, "infersim", "", "prebuilt static infersim binary (default: build ./cmd/infersim)")
	fs.IntVar(&o.TableRuns, "table-runs", 0, "table only: after the boot, this many rounds of the raw table and a fresh fleet's full table, nothing else")
	fs.StringVar(&o.Source, "source", fleetbench.SourceSSH, "ssh, or victorialogs: the store path too, side by side on the same hosts (the testbed starts VictoriaLogs fed by every host's systemd-journal-upload)")
	fs.IntVar(&o.CausesEvery, "causes-every", fleetbench.DefaultCausesEvery, "time to cause, after the steady window: every Nth host replays a failed corpus log (the scale rig's), all at once; 0: no such phase")
	out := fs.String("o", "", "write the JSON summary to FILE")
	profile := fs.String("steady-profile", "", "write a CPU profile of the steady-state window to FILE")
	tableProfile := fs.String("table-profile", "", "write a CPU profile of the fleet's start up to the full table to FILE")
	heapProfile := fs.String("heap-profile", "", "write a heap profile at the end of the steady-state window to FILE")
	catchupProfile := fs.String("catchup-profile", "", "write a CPU profile of bringup's first catch-up read to FILE")
	latencyProfile := fs.String("latency-profile", "", "write a CPU profile of the latency window (every unit started at once, until every host serves) to FILE")
	if err := fs.Parse(args); err != nil {
		return err
	}
	for _, p := range []struct {
		file string
		to   *io.Writer
	}{{*profile, &o.SteadyProfile}, {*tableProfile, &o.TableProfile}, {*heapProfile, &o.HeapProfile}, {*latencyProfile, &o.LatencyProfile}, {*catchupProfile, &o.CatchupProfile}} {
		if p.file == "" {
			continue
		}
		f, err := os.Create(p.file)
		if err != nil {
			return fmt.Errorf("bench: %w", err)
		}
		defer f.Close()
		*p.to = f
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("bench: unexpected arguments %q", fs.Args())
	}
	o.Logf = func(format string, a ...any) { fmt.Fprintf(stderr, format+"\n", a...) }
	finished := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			fmt.Fprintln(stderr, "fleetbench: stopping: taking the hosts down")
		case <-finished:
		}
	}()
	s, err := fleetbench.Run(ctx, o)
	close(finished)
	if s != nil {
		printSummary(stdout, s)
		if *out != "" {
			b, jerr := json.MarshalIndent(s, "", "  ")
			if jerr == nil {
				jerr = os.WriteFile(*out, append(b, '\n'), 0o644)
			}
			if jerr != nil {
				fmt.Fprintf(stderr, "fleetbench: summary %s: %v\n", *out, jerr)
			}
		}
	}
	return err
}

// printSummary prints the figures side by side, each with its ratio.
func printSummary(w io.Writer, s *fleetbench.Summary) {
	fmt.Fprintf(w, "fleetbench: %d hosts on %d cores, load %.1f → %.1f, booted in %.1f s, %.0f s in all\n",
		s.Hosts, s.Cores, s.Load[0], s.Load[1], s.BootS, s.TookS)
	for _, l := range s.Raised {
		fmt.Fprintf(w, "  raised %s\n", l)
	}
	row := func(what, bringup, raw string, r float64, note string) {
		fmt.Fprintf(w, "%-34s %-22s %-22s %7s  %s\n", what, bringup, raw, fmtRatio(r), note)
	}
	fmt.Fprintf(w, "%-34s %-22s %-22s %7s\n", "", "bringup", "raw ssh", "ratio")
	if t := s.FullTable; t.RawS > 0 {
		row("time to a full table", fmt.Sprintf("%.2f s", t.BringupS), fmt.Sprintf("%.2f s", t.RawS), t.Ratio,
			fmt.Sprintf("bringup/raw; +%.2f s resolving ssh_config; bringup %.2f s CPU, machine %.0f %% busy", t.ResolveS, t.BringupCPUS, t.MachineBusyPct))
	}
	for i, t := range s.TableRuns {
		row(fmt.Sprintf("  round %d", i+1), fmt.Sprintf("%.2f s", t.BringupS), fmt.Sprintf("%.2f s", t.RawS), t.Ratio,
			fmt.Sprintf("bringup %.2f s CPU, machine %.0f %% busy", t.BringupCPUS, t.MachineBusyPct))
	}
	if l := s.Latency; l.Lines > 0 {
		d := func(x fleetbench.Dist) string {
			return fmt.Sprintf("%s/%s/%s ms", fmtMs(x.P50ms), fmtMs(x.P99ms), fmtMs(x.MaxMs))
		}
		row("latency p50/p99/max (start all)", d(l.Fleet), d(l.Raw), l.Ratio, fmt.Sprintf("p99 bringup/raw; %d lines", l.Lines))
		row("  added per line (fleet − raw)", d(l.Added), "", 0, fmt.Sprintf("min %s ms: the raw reader later", fmtMs(l.Added.MinMs)))
		row("  delivered in a batch", d(l.Delivered), "", 0, "after the fold and the 50 ms flush")
		row("  control: raw − raw", d(l.RawVsRaw), "", 0, fmt.Sprintf("a second identical raw reader against the first; min %s ms", fmtMs(l.RawVsRaw.MinMs)))
		for i, x := range l.Late {
			if i == 3 || x.AddedMs < 100 {
				break
			}
			fmt.Fprintf(w, "    late: %s at %.1f s, +%.0f ms: %s\n", x.Host, x.AtS, x.AddedMs, x.Message)
		}
	}
	if st := s.Steady; st.WindowS > 0 {
		row("steady CPU (% of a core)", fmt.Sprintf("%.2f %%", st.BringupCPUPct), fmt.Sprintf("%.2f %%", st.RawCPUPct), st.CPURatio,
			fmt.Sprintf("bringup/raw over %.0f s quiet, %d events", st.WindowS, st.Events))
		row("steady RSS", fmt.Sprintf("%.1f MiB", st.BringupRSSMiB), fmt.Sprintf("%.1f MiB", st.RawRSSMiB), st.RSSRatio,
			fmt.Sprintf("bringup/raw; %.1f MiB before the fleet; Go heap %.1f, stacks %.1f, idle %.1f MiB; collected: heap %.1f, RSS %.1f MiB",
				st.BaseRSSMiB, st.HeapMiB, st.StackMiB, st.IdleMiB, st.LiveHeapMiB, st.CollectedRSSMiB))
	}
	if c := s.Causes; c != nil {
		printCauses(w, c, row)
	}
	if c := s.Catchup; len(c.Runs) > 0 {
		rate := func(sec float64) string {
			if sec == 0 {
				return "-"
			}
			return fmt.Sprintf("%.2f s %.0fk/s", sec, float64(c.Lines)/sec/1000)
		}
		row(fmt.Sprintf("catch-up %d lines (median of %d)", c.Lines, len(c.Runs)), rate(c.BringupS), rate(c.RawS), c.Speedup,
			fmt.Sprintf("speed bringup/raw; raw %.0f bytes a line", c.RawBytesPerLine))
		if c.ExportS > 0 {
			row("  control: raw -o export", rate(c.BringupS), rate(c.ExportS), c.ExportSpeedup,
				fmt.Sprintf("speed bringup/raw export (the pipe bringup reads); raw export %s raw JSON", fmtRatio(c.RawS/c.ExportS)))
		}
	}
	if st := s.Store; st != nil {
		printStore(w, st, row)
	}
	cl := s.Cleanup
	switch {
	case cl.Down && len(cl.Left) == 0 && cl.InventoryRemoved:
		fmt.Fprintln(w, "cleaned up: hosts down, no namespace, link, process or inventory left")
	default:
		fmt.Fprintf(w, "NOT cleaned up: down=%v inventory removed=%v left: %s %s\n", cl.Down, cl.InventoryRemoved, strings.Join(cl.Left, ", "), cl.Err)
	}
}

// printCauses prints the time-to-cause phase: the distribution, how many
// causes were the corpus's, and every miss and unmeasured host.
func printCauses(w io.Writer, c *fleetbench.Causes, row func(what, a, b string, r float64, note string)) {
	t := c.TimeToCause
	row("time to cause p50/p99/max", fmt.Sprintf("%s/%s/%s ms", fmtMs(t.P50ms), fmtMs(t.P99ms), fmtMs(t.MaxMs)), "", 0,
		fmt.Sprintf("PID 1's failure → settled cause in a batch; %d of %d failures settled, %d on the corpus's cause", c.Settled, c.Failing, c.Right))
	for i, x := range c.Times {
		if i == 3 {
			break
		}
		fmt.Fprintf(w, "    slow: %s %s in %.0f ms (%s)\n", x.Log, x.Cause, x.Ms, x.Host)
	}
	for _, m := range c.Misses {
		fmt.Fprintf(w, "    miss: %s → %s → %s (%s)\n", m.Log, m.Want, m.Got, m.Host)
	}
	for _, u := range c.Unmeasured {
		fmt.Fprintf(w, "    no time: %s\n", u)
	}
}

// printStore prints the store path against the SSH path, in the same
// columns as the rest.
func printStore(w io.Writer, st *fleetbench.Store, row func(what, a, b string, r float64, note string)) {
	fmt.Fprintf(w, "%-34s %-22s %-22s %7s\n", "through VictoriaLogs", "store", "ssh", "ratio")
	if t := st.ServingTable; t.SSHS > 0 {
		row("full table, hosts serving", fmt.Sprintf("%.2f s", t.StoreS), fmt.Sprintf("%.2f s", t.SSHS), t.Ratio,
			"store/ssh, a fresh console each, nothing else running")
	}
	if l := st.Latency; l.Lines > 0 {
		d := func(x fleetbench.Dist) string {
			return fmt.Sprintf("%s/%s/%s ms", fmtMs(x.P50ms), fmtMs(x.P99ms), fmtMs(x.MaxMs))
		}
		row("latency p50/p99/max (start all)", d(l.Store), "", l.Ratio, fmt.Sprintf("p50 store/ssh; %d lines, %d not through the store", l.Lines, l.Missing))
		row("  added per line vs raw", d(l.AddedVsRaw), "", 0, "store − raw reader, the same line")
		row("  added per line vs ssh fleet", d(l.AddedVsSSH), "", 0, "store − ssh fleet, the same line")
		row("  every host serving", fmt.Sprintf("%.1f s", l.ServingS), "", 0, "after the units' start")
	}
	if s := st.Steady; s.WindowS > 0 {
		row("steady CPU (% of a core)", fmt.Sprintf("%.2f %%", s.StoreCPUPct), fmt.Sprintf("%.2f %%", s.SSHCPUPct), s.CPURatio,
			fmt.Sprintf("store/ssh, %.0f s each alone; victoria-logs %.2f %%", s.WindowS, s.VLCPUPct))
		row("steady RSS", fmt.Sprintf("%.1f MiB", s.StoreRSSMiB), fmt.Sprintf("%.1f MiB", s.SSHRSSMiB), s.RSSRatio,
			fmt.Sprintf("store/ssh; %.1f MiB with no fleet; victoria-logs %.1f MiB", s.BaseRSSMiB, s.VLRSSMiB))
	}
}

// fmtMs prints whole milliseconds, without a "-0".
func fmtMs(v float64) string {
	if math.Abs(v) < 0.5 {
		return "0"
	}
	return fmt.Sprintf("%.0f", v)
}

func fmtRatio(r float64) string {
	if r == 0 {
		return ""
	}
	return fmt.Sprintf("%.2f×", r)
}
