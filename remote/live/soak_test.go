package live

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/fleet"
	"github.com/bringup-dev/bringup/remote/sshx"
	"github.com/bringup-dev/bringup/remote/startup"
	"github.com/bringup-dev/bringup/remote/testkit/testbed"
)

// The soak: N real hosts (SOAK_HOSTS, default 32) followed for a while
// (SOAK_MINUTES, default 20) under random link cuts, restarts and a reboot while
// every host floods its journal (SOAK_FLOOD lines a second each, default
// 20). At the end: every flood line of every invocation delivered once
// and in order (none lost, none twice), no journalctl left on a host
// beyond the follower's own, and this process's goroutines, open files
// and RSS back where they were after the warm-up (± 10 %).
//
// It runs only by hand (make soak): BRINGUP_E2E=1 and BRINGUP_SOAK=1.
func TestSoak(t *testing.T) {
	if os.Getenv("BRINGUP_SOAK") != "1" {
		t.Skip("the soak runs by hand: make soak (BRINGUP_E2E=1 BRINGUP_SOAK=1)")
	}
	hosts, minutes, flood := envInt(t, "SOAK_HOSTS", 32), envInt(t, "SOAK_MINUTES", 20), envInt(t, "SOAK_FLOOD", 20)
	env := map[string]string{"INFERSIM_FLOOD": strconv.Itoa(flood)}
	for k, v := range fastEnv {
		env[k] = v
	}
	tb := testbed.StartWith(t, testbed.Options{Hosts: hosts, Host: func(int) testbed.HostOptions {
		// Enabled: a rebooted host comes back serving by itself.
		return testbed.HostOptions{Env: env, KernelMode: "on", Enable: true}
	}})
	ctx, cancel := context.WithTimeout(t.Context(), time.Duration(minutes)*time.Minute+15*time.Minute)
	defer cancel()

	var specs []fleet.HostSpec
	for _, h := range tb.Hosts() {
		cfg, err := sshx.Resolve(ctx, h.Name, sshx.ResolveOptions{ConfigFile: tb.SSHConfig()})
		if err != nil {
			t.Fatalf("resolve %s: %v", h.Name, err)
		}
		specs = append(specs, fleet.HostSpec{Driver: New(Options{Host: remote.Host{Name: h.Name, Unit: testbed.UnitName}, SSH: cfg, Tail: -1,
			FromStart: time.Hour, NoGPU: true}), Unit: testbed.UnitName, Engine: "sglang"})
	}
	f, err := fleet.New(specs, fleet.Options{Kernels: kernels.DefaultCatalog()})
	if err != nil {
		t.Fatal(err)
	}
	fl := fleet.Follow(ctx, f)
	defer func() {
		if err := fl.Stop(30 * time.Second); err != nil {
			t.Error(err)
		}
	}()
	seen := newFloodLedger()
	read := func(cond func([]remote.HostState) bool, within time.Duration, what string) {
		t.Helper()
		c, stop := context.WithTimeout(ctx, within)
		defer stop()
		err := fl.Until(c, time.Second, func(b remote.Batch) bool {
			seen.add(b)
			return cond(fl.Last())
		})
		if err != nil {
			t.Fatalf("waiting for %s: %v (%s)", what, err, summary(fl.Last()))
		}
	}
	read(func(hs []remote.HostState) bool { return len(hs) == hosts && all(hs, unitKnown) }, 3*time.Minute, "every unit state")
	for _, h := range tb.Hosts() {
		if out, err := tb.Run(ctx, h.Name, "systemctl start "+testbed.UnitName); err != nil {
			t.Fatalf("start %s: %v: %s", h.Name, err, out)
		}
	}
	read(func(hs []remote.HostState) bool { return all(hs, serving) }, 5*time.Minute, "every host serving")
	soakFor := func(d time.Duration) { // read for d, whatever happens
		c, stop := context.WithTimeout(ctx, d)
		defer stop()
		_ = fl.Until(c, time.Second, func(b remote.Batch) bool { seen.add(b); return false })
	}
	soakFor(time.Minute) // the warm-up
	before := measure()
	t.Logf("after warm-up: %s", before)

	// Faults until the deadline, one every few seconds, then quiet.
	deadline := time.Now().Add(time.Duration(minutes) * time.Minute)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	var cuts, restarts, reboots int
	var faults sync.WaitGroup
	rebootAt := time.Now().Add(time.Until(deadline) / 2)
	for time.Now().Before(deadline) {
		if reboots == 0 && time.Now().After(rebootAt) {
			faults.Wait() // a host behind a cut link could not be told to reboot
			reboots++
			h := tb.Hosts()[rng.IntN(hosts)]
			if err := tb.Reboot(ctx, h.Name); err != nil {
				t.Fatalf("reboot: %v", err)
			}
			t.Logf("%s rebooted", h.Name)
			continue
		}
		h := tb.Hosts()[rng.IntN(hosts)]
		switch rng.IntN(3) {
		case 0, 1: // a link cut of 2-20 s, in the background
			cuts++
			faults.Add(1)
			go func(link string, d time.Duration) {
				defer faults.Done()
				setLink(t, link, "down")
				time.Sleep(d)
				setLink(t, link, "up")
			}(h.Link, time.Duration(2+rng.IntN(19))*time.Second)
		case 2:
			restarts++
			if out, err := tb.Run(ctx, h.Name, "systemctl restart "+testbed.UnitName); err != nil {
				t.Logf("restart %s: %v: %s (a cut link, probably)", h.Name, err, out)
			}
		}
		soakFor(time.Duration(3+rng.IntN(8)) * time.Second)
	}
	faults.Wait()
	read(func(hs []remote.HostState) bool { return all(hs, serving) && all(hs, connected) }, 5*time.Minute, "every host back and serving")
	soakFor(time.Minute) // the cool-down
	after := measure()
	t.Logf("%d link cuts, %d restarts, %d reboot over %d min on %d hosts, %d lines a second each", cuts, restarts, reboots, minutes, hosts, flood)
	t.Logf("after cool-down: %s", after)

	lost, dup, lines := 0, 0, 0
	for _, h := range tb.Hosts() {
		for inv, l := range seen.invocations(h.Name) {
			lines += l.count
			dup += l.dup
			// What the host's journal holds of this invocation's flood,
			// up to the last line seen: every one must have arrived.
			out, err := tb.Run(ctx, h.Name, fmt.Sprintf("journalctl -q -o cat _SYSTEMD_INVOCATION_ID=%s | grep -c '^soak flood seq='", inv))
			if err != nil && strings.TrimSpace(out) != "0" {
				t.Errorf("%s: count invocation %s: %v: %s", h.Name, inv, err, out)
				continue
			}
			held, _ := strconv.Atoi(strings.TrimSpace(out))
			if l.skipped > 0 {
				t.Errorf("%s invocation %.8s: %d flood lines skipped in the stream", h.Name, inv, l.skipped)
			}
			if missing := min(held, l.max) - l.count; missing > 0 {
				lost += missing
				t.Errorf("%s invocation %.8s: %d of the first %d flood lines never arrived", h.Name, inv, missing, min(held, l.max))
			}
			if l.dup > 0 {
				t.Errorf("%s invocation %.8s: %d flood lines arrived twice", h.Name, inv, l.dup)
			}
		}
		out, _ := tb.Run(ctx, h.Name, "pgrep -c -x journalctl || true")
		if n, _ := strconv.Atoi(strings.TrimSpace(out)); n > 1 {
			t.Errorf("%s: %d journalctl processes, want the follower's one", h.Name, n)
		}
	}
	t.Logf("flood lines delivered %d, lost %d, duplicated %d; dropped by the fleet %d", lines, lost, dup, seen.dropped)
	if seen.dropped > 0 {
		t.Errorf("the fleet dropped %d lines for a slow reader", seen.dropped)
	}
	for _, c := range []struct {
		what          string
		before, after float64
	}{{"goroutines", float64(before.goroutines), float64(after.goroutines)},
		{"open files", float64(before.fds), float64(after.fds)},
		{"RSS", float64(before.rss), float64(after.rss)}} {
		if c.after > c.before*1.10 {
			t.Errorf("%s grew from %.0f to %.0f (> 10 %%)", c.what, c.before, c.after)
		}
	}
}

// floodLedger counts, per host and invocation, the flood lines seen.
type floodLedger struct {
	byHost  map[string]map[string]*floodCount
	dropped int
}

// floodCount is one invocation's flood as it arrived: in order, each
// line the one after the last (O(1) memory, so the ledger does not weigh
// on the RSS the soak measures).
type floodCount struct {
	count, dup, skipped int
	max                 int
}

func newFloodLedger() *floodLedger { return &floodLedger{byHost: map[string]map[string]*floodCount{}} }

func (l *floodLedger) add(b remote.Batch) {
	l.dropped += b.Dropped
	for _, ev := range b.Events {
		j := ev.Journal
		if ev.Kind != event.KindJournal || j == nil || !strings.HasPrefix(j.Message, "soak flood seq=") {
			continue
		}
		n, err := strconv.Atoi(strings.TrimPrefix(j.Message, "soak flood seq="))
		if err != nil {
			continue
		}
		invs := l.byHost[ev.Host]
		if invs == nil {
			invs = map[string]*floodCount{}
			l.byHost[ev.Host] = invs
		}
		c := invs[j.InvocationID]
		if c == nil {
			c = &floodCount{}
			invs[j.InvocationID] = c
		}
		switch {
		case n <= c.max: // again, or out of order: both are defects
			c.dup++
		default:
			c.skipped += n - c.max - 1
			c.count++
			c.max = n
		}
	}
}

func (l *floodLedger) invocations(host string) map[string]*floodCount { return l.byHost[host] }

// usage is what this process holds.
type usage struct{ goroutines, fds, rss int }

func (u usage) String() string {
	return fmt.Sprintf("%d goroutines, %d open files, RSS %d KiB", u.goroutines, u.fds, u.rss)
}

func measure() usage {
	debug.FreeOSMemory() // a GC, and the freed heap back to the OS: RSS is what is live
	u := usage{goroutines: runtime.NumGoroutine()}
	if fds, err := os.ReadDir("/proc/self/fd"); err == nil {
		u.fds = len(fds)
	}
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				u.rss, _ = strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			}
		}
	}
	return u
}

func setLink(t *testing.T, link, state string) {
	if out, err := exec.Command("ip", "link", "set", link, state).CombinedOutput(); err != nil {
		t.Errorf("ip link set %s %s: %v: %s", link, state, err, out)
	}
}

func envInt(t *testing.T, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q: want a positive number", name, s)
	}
	return n
}

func all(hs []remote.HostState, ok func(remote.HostState) bool) bool {
	for _, h := range hs {
		if !ok(h) {
			return false
		}
	}
	return len(hs) > 0
}

func unitKnown(h remote.HostState) bool { return h.UnitState.ActiveState != "" }
func serving(h remote.HostState) bool   { return h.Startup.Phase == startup.Serving }
func connected(h remote.HostState) bool { return h.Conn.State == event.ConnUp }

func summary(hs []remote.HostState) string {
	var s []string
	for _, h := range hs {
		s = append(s, fmt.Sprintf("%s %s %s", h.Name, h.Startup.Phase, h.Conn.State))
	}
	return strings.Join(s, "; ")
}
