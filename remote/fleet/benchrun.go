package fleet

import (
	"context"
	"time"

	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/event"
)

// BenchOutcome is how one host's bench through the fleet ended: what it
// measured (nil: nothing, the load could not start), and the action's
// error ("" when it completed).
type BenchOutcome struct {
	Host   string
	Result *event.Bench
	Err    string
}

// Bench runs a (an ActBench) on each of hosts at once through the fleet's
// door, hands each counted step to progress (may be nil), and hands each
// host's outcome to ended as it ends, until every one has. When ctx ends
// first (Ctrl-C), the benches are cancelled (Cancel) and their partial
// results still waited for, up to grace. This is `bringup bench`'s loop;
// the console issues the same action and reads the same events.
func (fl *Follower) Bench(ctx context.Context, hosts []string, a remote.Action, grace time.Duration,
	progress func(host string, done, total int), ended func(BenchOutcome)) {
	ids := map[string]int{}
	results := map[string]*event.Bench{}
	for _, h := range hosts {
		id, err := fl.fleet.Do(h, a)
		if err != nil {
			ended(BenchOutcome{Host: h, Err: err.Error()})
			continue
		}
		ids[h] = id
	}
	if len(ids) == 0 {
		return
	}
	var stopBy time.Time
	// The fleet is read on a context of its own: past ctx's end, the
	// cancelled benches still report what they measured.
	_ = fl.Until(context.WithoutCancel(ctx), 100*time.Millisecond, func(b remote.Batch) bool {
		if stopBy.IsZero() && ctx.Err() != nil {
			stopBy = time.Now().Add(grace)
			for h, id := range ids {
				_ = fl.fleet.Cancel(h, id) // one that just ended is no longer there
			}
		}
		for _, ev := range b.Events {
			r := ev.Action
			if ev.Kind != event.KindAction || r == nil || r.ID == 0 || ids[ev.Host] != r.ID {
				continue
			}
			if r.Bench != nil {
				res := *r.Bench
				results[ev.Host] = &res
			}
			switch r.Stage {
			case event.ActionProgress:
				if progress != nil && r.Total > 0 && r.Bench == nil {
					progress(ev.Host, r.Done, r.Total)
				}
			case event.ActionDone, event.ActionFailed:
				ended(BenchOutcome{Host: ev.Host, Result: results[ev.Host], Err: r.Err})
				delete(ids, ev.Host)
			case event.ActionStarted:
			}
		}
		if !stopBy.IsZero() && time.Now().After(stopBy) {
			for h := range ids {
				ended(BenchOutcome{Host: h, Result: results[h], Err: "did not stop within " + grace.String()})
			}
			return true
		}
		return len(ids) == 0
	})
}
