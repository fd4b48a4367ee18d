package systemd

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/bringup-dev/bringup/remote/testkit/tbssh"
	"github.com/bringup-dev/bringup/remote/testkit/testbed"
)

// readBusStore is readBus as it was: GetAll of each interface in turn,
// each answer stored into a new map (godbus's Store).
func readBusStore(ctx context.Context, conn *dbus.Conn, unit string, path dbus.ObjectPath) (map[string]dbus.Variant, error) {
	obj := conn.Object(busName, path)
	ifaces := []string{unitIface}
	if strings.HasSuffix(unit, ".service") {
		ifaces = append(ifaces, serviceIface)
	}
	all := map[string]dbus.Variant{}
	for _, iface := range ifaces {
		var m map[string]dbus.Variant
		if err := obj.CallWithContext(ctx, propsIface+".GetAll", 0, iface).Store(&m); err != nil {
			return nil, fmt.Errorf("get properties of %s (%s): %w", unit, iface, err)
		}
		keep(all, m)
	}
	return all, nil
}

// serviceProps are the showProps of the Service interface; the rest are
// the Unit interface's.
var serviceProps = map[string]bool{
	"Result": true, "NRestarts": true, "MainPID": true, "ExecMainStartTimestamp": true, "Environment": true, "ExecStart": true,
}

// readBusGets reads showProps by a Get each, all sent at once: the
// other way to read only what is kept, measured against GetAll.
func readBusGets(ctx context.Context, conn *dbus.Conn, unit string, path dbus.ObjectPath) (map[string]dbus.Variant, error) {
	obj := conn.Object(busName, path)
	service := strings.HasSuffix(unit, ".service")
	var names []string
	for _, name := range showProps {
		if service || !serviceProps[name] {
			names = append(names, name)
		}
	}
	done := make(chan *dbus.Call, len(names))
	calls := make([]*dbus.Call, len(names))
	for i, name := range names {
		iface := unitIface
		if serviceProps[name] {
			iface = serviceIface
		}
		calls[i] = obj.GoWithContext(ctx, propsIface+".Get", 0, done, iface, name)
	}
	for range calls {
		<-done
	}
	all := map[string]dbus.Variant{}
	for i, c := range calls {
		var v dbus.Variant
		if err := c.Store(&v); err != nil {
			return nil, fmt.Errorf("get %s of %s: %w", names[i], unit, err)
		}
		all[names[i]] = v
	}
	return all, nil
}

// busFor opens the system bus of a testbed host and loads unit there.
func busFor(tb testing.TB, conn Dialer, host, unit string) (*dbus.Conn, dbus.ObjectPath) {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	tb.Cleanup(cancel)
	bus, err := openBus(ctx, conn, host, unknownUID, PathDBus, true)
	if err != nil {
		tb.Fatal(err)
	}
	var p dbus.ObjectPath
	if err := bus.Object(busName, managerPath).CallWithContext(ctx, managerIface+".LoadUnit", 0, unit).Store(&p); err != nil {
		tb.Fatal(err)
	}
	return bus, p
}

// testReadBus: subscribeUnit (Hello and all at once) reads what readBus
// did before (readBusStore, each call in turn), on a real systemd: the
// testbed's service (stopped), a running service, an alias of one
// (sshd.service is ssh.service on Debian: systemd answers the real
// unit's path, not the one subscribeUnit guessed, and it reads again
// there), a unit that is not a service (no Service interface: its
// properties are left out, not an error), one that does not exist and a
// template's instance. It runs before the tests that change hostDBus's
// unit.
func testReadBus(t *testing.T, tb *testbed.Testbed) {
	conn := connect(t, tb, hostDBus)
	ctx := ctxT(t, time.Minute)
	for _, tc := range []struct {
		unit  string
		alias bool
	}{
		{testbed.UnitName, false}, {"ssh.service", false}, {"sshd.service", true}, {"systemd-journald.service", false},
		{"multi-user.target", false}, {"no-such-unit.service", false}, {"getty@tty9.service", false},
	} {
		unit := tc.unit
		bctx, cancel := context.WithCancel(ctx)
		bus, err := openBus(bctx, conn, hostDBus, unknownUID, PathDBus, false)
		if err != nil {
			t.Fatal(err)
		}
		p, got, _, step, err := subscribeUnit(ctx, bus, unit)
		if err != nil {
			t.Fatalf("%s: subscribeUnit: %s: %v", unit, step, err)
		}
		if guessed := p == unitObjectPath(unit); guessed == tc.alias {
			t.Errorf("%s: path %s, guessed %s", unit, p, unitObjectPath(unit))
		}
		want, err := readBusStore(ctx, bus, unit, p)
		if err != nil {
			t.Fatalf("%s: stored GetAll: %v", unit, err)
		}
		cancel()
		// Timestamps of a running unit do not move between two reads.
		g, w := fromBus(unit, PathDBus, got), fromBus(unit, PathDBus, want)
		if !reflect.DeepEqual(g, w) {
			t.Errorf("%s: subscribeUnit read %+v\nbefore: %+v", unit, g.unit, w.unit)
		}
		if len(got) != len(want) {
			t.Errorf("%s: subscribeUnit read %d properties, before %d", unit, len(got), len(want))
		}
		if g.unit.LoadState == "" {
			t.Errorf("%s: no LoadState read", unit)
		}
	}
}

// BenchmarkReadBus reads the testbed service's properties the way readBus
// does (GetAll of both interfaces at once, the answers as decoded), the
// way it did (one after the other, each stored into a new map), and by a
// Get per property, side by side on one host's real systemd. Besides the
// client's time and allocations per reading, it reports the CPU the
// host's systemd (PID 1) and dbus-daemon spent per reading, from their
// /proc stat before and after.
func BenchmarkReadBus(b *testing.B) {
	tb := testbed.StartWith(b, testbed.Options{Hosts: 1})
	conn := tbssh.Connect(b, tb, "gpu1")
	bus, p := busFor(b, conn, "gpu1", testbed.UnitName)
	ctx := context.Background()
	// cpuTicks is the user+system clock ticks of PID 1 and dbus-daemon.
	cpuTicks := func() (systemd, daemon int64) {
		out, err := tb.Run(ctx, "gpu1", `cat /proc/1/stat; cat /proc/$(pidof dbus-daemon)/stat`)
		if err != nil {
			b.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != 2 {
			b.Fatalf("stat: %q", out)
		}
		ticks := func(l string) int64 {
			f := strings.Fields(l[strings.LastIndexByte(l, ')')+2:])
			var u, s int64
			fmt.Sscan(f[11], &u) //nolint:errcheck // a bad field reads as 0 and shows
			fmt.Sscan(f[12], &s) //nolint:errcheck
			return u + s
		}
		return ticks(lines[0]), ticks(lines[1])
	}
	for _, bc := range []struct {
		name string
		read func() error
	}{
		{"readbus", func() error { _, _, err := readBus(ctx, bus, testbed.UnitName, p); return err }},
		{"stored", func() error { _, err := readBusStore(ctx, bus, testbed.UnitName, p); return err }},
		{"gets", func() error { _, err := readBusGets(ctx, bus, testbed.UnitName, p); return err }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			s0, d0 := cpuTicks()
			n := 0
			for b.Loop() {
				if err := bc.read(); err != nil {
					b.Fatal(err)
				}
				n++
			}
			s1, d1 := cpuTicks()
			// USER_HZ is 100 on Linux: a tick is 10 ms.
			b.ReportMetric(float64(s1-s0)*1e4/float64(n), "systemd-µs/op")
			b.ReportMetric(float64(d1-d0)*1e4/float64(n), "dbus-µs/op")
		})
	}
}
