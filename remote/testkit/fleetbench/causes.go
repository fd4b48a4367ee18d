package fleetbench

import (
	"bufio"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/fleet"
	"github.com/bringup-dev/bringup/remote/startup"
	"github.com/bringup-dev/bringup/remote/startup/corpus"
	"github.com/bringup-dev/bringup/remote/testkit/scalerig"
	"github.com/bringup-dev/bringup/remote/testkit/testbed"
)

// DefaultCausesEvery is the cmd's default for Options.CausesEvery: a
// quarter of the hosts fail.
const DefaultCausesEvery = 4

// Causes is the time from a failure to its settled cause in the fleet's
// batch, what on-call waits for: every CausesEvery-th host replays a real
// failed corpus log as its unit's run, all started at once, while the
// fleet that followed the rest of the bench watches.
type Causes struct {
	// Failing is how many hosts replayed a failed log; Settled how many
	// of them had a settled cause (Phase Failed, not provisional, a
	// diagnosis) for the replayed run in time; Right how many of those
	// named the corpus log's cause.
	Failing int `json:"failing"`
	Settled int `json:"settled"`
	Right   int `json:"right"`
	// TimeToCause is, per settled host, the batch's wall time less the
	// journal timestamp of PID 1's "Failed with result" for the run (the
	// test hosts share this machine's clock).
	TimeToCause Dist `json:"time_to_cause"`
	// Times are the timed hosts' times to cause, the slowest first: which
	// logs waited (a provisional failure waits the fleet's settle window).
	Times []CauseTime `json:"times,omitempty"`
	// Misses are the settled causes that are not the corpus's;
	// Unmeasured the hosts with no time to cause: no settled cause in
	// time, or no failure entry found in their journal ("host log: why").
	Misses     []CauseMiss `json:"misses,omitempty"`
	Unmeasured []string    `json:"unmeasured,omitempty"`
}

// CauseTime is one host's time to cause.
type CauseTime struct {
	Host  string  `json:"host"`
	Log   string  `json:"log"`
	Cause string  `json:"cause"` // as settled
	Ms    float64 `json:"ms"`
}

// CauseMiss is one settled cause that is not the corpus log's.
type CauseMiss struct {
	Host string `json:"host"`
	Log  string `json:"log"`
	Want string `json:"want"`
	Got  string `json:"got"`
}

// causesWait bounds the wait for every failing host's settled cause, and
// for the restored hosts to serve again.
const causesWait = 2 * time.Minute

// corpusDropIn is the drop-in that makes the unit's run a corpus log's:
// it prints the log and fails, as cmd/bringup's TestCorpusOnTestbed does.
const corpusDropIn = "/run/systemd/system/" + testbed.UnitName + ".d/zz-corpus.conf"

// corpusLogFile is where a host keeps the log its run prints.
const corpusLogFile = "/var/lib/corpus/log"

// msgFailureResult is the MESSAGE_ID of PID 1's "Failed with result"
// (SD_MESSAGE_UNIT_FAILURE_RESULT, systemd's sd-messages.h).
const msgFailureResult = "d9b373ed55a64feb8242e02dbe79a49c"

// causeRun is one failing host's replay, as measured.
type causeRun struct {
	host, log, want string
	// settled says the fleet settled a cause (got) for the replayed run,
	// in the batch that reached the bench at at; invocation is that run's
	// id.
	settled    bool
	got        string
	at         time.Time
	invocation string
	// failedAt is the journal timestamp of the run's failure; zero when
	// it was not found (why says why).
	failedAt time.Time
	why      string
}

// causeCases are the failing hosts and the logs they replay: the scale
// rig's choice (scalerig.Plan, every every-th host failing), so that both
// benches replay the same failed logs.
func causeCases(logs []corpus.Log, hosts []string, every int) ([]causeRun, map[string]corpus.Log, error) {
	plan, err := scalerig.Plan(logs, scalerig.PlanOptions{Hosts: len(hosts), FailEvery: every})
	if err != nil {
		return nil, nil, err
	}
	byName := make(map[string]corpus.Log, len(logs))
	for _, l := range logs {
		byName[l.Name] = l
	}
	var runs []causeRun
	bodies := map[string]corpus.Log{}
	for i, p := range plan {
		if p.Fail {
			runs = append(runs, causeRun{host: hosts[i], log: p.Log, want: p.Cause})
			bodies[hosts[i]] = byName[p.Log]
		}
	}
	return runs, bodies, nil
}

// replayCmd readies host to replay l as its unit's next run: the unit
// stopped, the log written, the drop-in in place. The run starts later,
// on every failing host at once.
func replayCmd(l corpus.Log) string {
	return "systemctl stop " + testbed.UnitName + "; systemctl reset-failed " + testbed.UnitName + "; " +
		"mkdir -p /var/lib/corpus /run/systemd/system/" + testbed.UnitName + ".d && " +
		"printf %s " + base64.StdEncoding.EncodeToString([]byte(l.Body)) + " | base64 -d > " + corpusLogFile + " && " +
		`printf '[Service]\nExecStart=\nExecStart=/bin/sh -c "cat ` + corpusLogFile + `; exit 1"\n' > ` + corpusDropIn + " && " +
		"systemctl daemon-reload"
}

// restoreCmd undoes replayCmd and starts the unit as it was.
const restoreCmd = "rm -f " + corpusDropIn + " " + corpusLogFile + " && systemctl daemon-reload && " +
	"systemctl reset-failed " + testbed.UnitName + " && systemctl start " + testbed.UnitName

// causes runs the time-to-cause phase on fl, the fleet following hosts:
// every Options.CausesEvery-th host replays a failed corpus log, all
// started at once; then the hosts are restored and serve again.
func (b *bench) causes(ctx context.Context, fl *fleet.Follower, hosts []string) error {
	logs, err := corpus.ReadAll(corpus.Dir())
	if err != nil {
		return err
	}
	runs, bodies, err := causeCases(logs, hosts, b.o.CausesEvery)
	if err != nil {
		return err
	}
	if len(runs) == 0 {
		return nil
	}
	failing := make([]string, len(runs))
	for i, r := range runs {
		failing[i] = r.host
	}
	before := map[string]startup.Startup{}
	for _, h := range fl.Last() {
		before[h.Name] = h.Startup
	}
	b.o.Logf("fleetbench: time to cause: %d of %d hosts replay a failed corpus log", len(runs), len(hosts))
	if err := b.drainWhile(ctx, fl, func() error {
		return eachHost(failing, func(i int, h string) error {
			if out, err := b.tb.Run(ctx, h, replayCmd(bodies[h])); err != nil {
				return fmt.Errorf("ready %s: %w: %s", runs[i].log, err, out)
			}
			return nil
		})
	}); err != nil {
		return err
	}
	// The fleet's view now: the stop is in, and the replayed run is the
	// one after it.
	for _, h := range fl.Last() {
		before[h.Name] = h.Startup
	}
	since := time.Now()
	startErr := make(chan error, 1)
	go func() {
		startErr <- eachHost(failing, func(_ int, h string) error {
			out, err := b.tb.Run(ctx, h, "systemctl start "+testbed.UnitName)
			if err != nil {
				return fmt.Errorf("%w: %s", err, out)
			}
			return nil
		})
	}()
	index := make(map[string]int, len(runs))
	for i, r := range runs {
		index[r.host] = i
	}
	left := len(runs)
	wctx, cancel := context.WithTimeout(ctx, causesWait)
	err = fl.Until(wctx, 0, func(bt remote.Batch) bool {
		now := time.Now()
		for _, h := range bt.Hosts {
			i, ok := index[h.Name]
			if !ok || runs[i].settled {
				continue
			}
			if settledCause(h, before[h.Name]) {
				runs[i].settled, runs[i].got, runs[i].at, runs[i].invocation = true, h.Startup.Diag.Cause, now, h.Startup.InvocationID
				left--
			}
		}
		return left == 0
	})
	cancel()
	if serr := <-startErr; serr != nil {
		return fmt.Errorf("start: %w", serr)
	}
	if err != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil {
		b.o.Logf("fleetbench: time to cause: %d of %d causes not settled: %v (%s)", left, len(runs), err, summary(fl.Last()))
	}
	err = eachHost(failing, func(i int, h string) error {
		r := &runs[i]
		out, err := b.tb.Run(ctx, h, failureQuery(since))
		if err != nil {
			r.why = fmt.Sprintf("journal: %v", err)
			return nil
		}
		if r.failedAt, err = failureAt(out, r.invocation); err != nil {
			r.why = err.Error()
		}
		return nil
	})
	if err != nil {
		return err
	}
	c := causeFigures(runs)
	b.s.Causes = &c
	b.o.Logf("fleetbench: time to cause: %d of %d settled, %d on the corpus's cause; p50/p99/max %.0f/%.0f/%.0f ms",
		c.Settled, c.Failing, c.Right, c.TimeToCause.P50ms, c.TimeToCause.P99ms, c.TimeToCause.MaxMs)
	return b.restore(ctx, fl, failing, len(hosts))
}

// restore undoes the replays and waits for every host to serve again,
// so that the phases after see the fleet as before.
func (b *bench) restore(ctx context.Context, fl *fleet.Follower, failing []string, n int) error {
	err := b.drainWhile(ctx, fl, func() error {
		return eachHost(failing, func(_ int, h string) error {
			if out, err := b.tb.Run(ctx, h, restoreCmd); err != nil {
				return fmt.Errorf("restore: %w: %s", err, out)
			}
			return nil
		})
	})
	if err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, causesWait)
	defer cancel()
	err = fl.Until(wctx, 0, func(bt remote.Batch) bool {
		return len(bt.Hosts) == n && all(bt.Hosts, func(h remote.HostState) bool { return h.Startup.Phase == startup.Serving })
	})
	if err != nil {
		return fmt.Errorf("every host serving again: %w (%s)", err, summary(fl.Last()))
	}
	return nil
}

// drainWhile runs f while handing the fleet's batches to nobody, so that
// the fleet is not held up by a consumer busy elsewhere.
func (b *bench) drainWhile(ctx context.Context, fl *fleet.Follower, f func() error) error {
	dctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = fl.Until(dctx, 0, func(remote.Batch) bool { return false })
	}()
	err := f()
	cancel()
	wg.Wait()
	return err
}

// settledCause says h's state is a settled cause for a run after the one
// in was: a new run, failed, not provisional, with its diagnosis.
func settledCause(h remote.HostState, was startup.Startup) bool {
	st := h.Startup
	return st.Run > was.Run && st.InvocationID != was.InvocationID &&
		st.Phase == startup.Failed && h.Settled() && st.Diag != nil
}

// failureQuery reads the unit's journal since just before since, as
// JSON, with the fields failureAt looks at.
func failureQuery(since time.Time) string {
	return "journalctl -u " + testbed.UnitName + " --no-pager -o json --output-fields=_PID,MESSAGE_ID,MESSAGE,INVOCATION_ID" +
		" --since @" + strconv.FormatInt(since.Unix()-1, 10)
}

// failureAt finds, in journalctl -o json output, PID 1's "Failed with
// result" entry for the run with invocation id inv ("": the first such
// entry) and returns its __REALTIME_TIMESTAMP.
func failureAt(jsonLines, inv string) (time.Time, error) {
	sc := bufio.NewScanner(strings.NewReader(jsonLines))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 {
			continue
		}
		var e map[string]any
		if err := json.Unmarshal(line, &e); err != nil {
			return time.Time{}, fmt.Errorf("journal entry: %w", err)
		}
		str := func(k string) string { s, _ := e[k].(string); return s }
		if str("_PID") != "1" {
			continue
		}
		if str("MESSAGE_ID") != msgFailureResult && !strings.Contains(str("MESSAGE"), "Failed with result") {
			continue
		}
		if inv != "" && str("INVOCATION_ID") != inv {
			continue
		}
		us, err := strconv.ParseInt(str("__REALTIME_TIMESTAMP"), 10, 64)
		if err != nil {
			return time.Time{}, fmt.Errorf("failure entry's __REALTIME_TIMESTAMP: %w", err)
		}
		return time.UnixMicro(us), nil
	}
	if err := sc.Err(); err != nil {
		return time.Time{}, err
	}
	if inv == "" {
		return time.Time{}, errors.New("no PID 1 \"Failed with result\" entry")
	}
	return time.Time{}, fmt.Errorf("no PID 1 \"Failed with result\" entry for invocation %s", inv)
}

// causeFigures sums the runs up: the time to cause of every settled run
// whose failure entry was found, how many named the corpus's cause, the
// misses and the runs with no time.
func causeFigures(runs []causeRun) Causes {
	c := Causes{Failing: len(runs)}
	var ds []time.Duration
	for _, r := range runs {
		switch {
		case !r.settled:
			c.Unmeasured = append(c.Unmeasured, r.host+" "+r.log+": no settled cause")
			continue
		case r.failedAt.IsZero():
			c.Unmeasured = append(c.Unmeasured, r.host+" "+r.log+": "+r.why)
		default:
			ds = append(ds, r.at.Sub(r.failedAt))
			c.Times = append(c.Times, CauseTime{Host: r.host, Log: r.log, Cause: r.got, Ms: ms(r.at.Sub(r.failedAt))})
		}
		c.Settled++
		if r.got == r.want {
			c.Right++
		} else {
			c.Misses = append(c.Misses, CauseMiss{Host: r.host, Log: r.log, Want: r.want, Got: r.got})
		}
	}
	slices.SortStableFunc(c.Times, func(a, b CauseTime) int { return cmp.Compare(b.Ms, a.Ms) })
	slices.SortFunc(c.Misses, func(a, b CauseMiss) int { return strings.Compare(a.Log, b.Log) })
	c.TimeToCause = distOf(ds)
	return c
}
