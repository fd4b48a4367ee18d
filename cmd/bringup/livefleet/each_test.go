package livefleet

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/remote/live"
)

// TestEachHostAtOnceInOrder: EachHost looks at hosts at the same time
// (each look here waits until all of them have started: run one after
// another they would never get there) and yields them in the order
// given, whatever order they finish in; at most Parallel run at once.
func TestEachHostAtOnceInOrder(t *testing.T) {
	n := Parallel
	rs := make([]live.Options, n)
	for i := range rs {
		rs[i].Name = fmt.Sprintf("gpu%d", i)
	}
	var mu sync.Mutex
	started, running, most := 0, 0, 0
	all := make(chan struct{})
	look := func(ctx context.Context, o live.Options) string {
		mu.Lock()
		started++
		running++
		most = max(most, running)
		if started == n {
			close(all)
		}
		mu.Unlock()
		select {
		case <-all:
		case <-ctx.Done():
			return "timed out before every host started"
		}
		if o.Name == "gpu0" { // the first finishes last
			time.Sleep(10 * time.Millisecond)
		}
		mu.Lock()
		running--
		mu.Unlock()
		return o.Name
	}
	var got []string
	for o, r := range EachHost(t.Context(), rs, 10*time.Second, look) {
		if r != o.Name {
			t.Fatalf("%s: %s", o.Name, r)
		}
		got = append(got, r)
	}
	if len(got) != n || got[0] != "gpu0" || got[n-1] != rs[n-1].Name || most > Parallel {
		t.Errorf("yielded %v, %d at once at most", got, most)
	}
}
