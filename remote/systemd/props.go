package systemd

import (
	"context"
	"encoding/hex"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/bringup-dev/bringup/remote/event"
)

// showProps are the properties read, in `systemctl show -p` form. The
// D-Bus paths read the same names from the Unit and Service interfaces.
var showProps = []string{
	"Id", "LoadState", "ActiveState", "SubState", "Result", "NRestarts", "InvocationID", "MainPID",
	"StateChangeTimestamp", "ExecMainStartTimestamp", "ActiveEnterTimestamp", "InactiveEnterTimestamp",
	"Environment", "DropInPaths", "NeedDaemonReload", "ExecStart",
}

// snapshot is one reading of the unit: its state and the host time of its
// last state change (zero when the host has none).
type snapshot struct {
	unit        event.Unit
	stateChange time.Time
}

// sameUnit reports whether a and b show the same state, so that a
// re-read that changed nothing emits nothing.
func sameUnit(a, b event.Unit) bool {
	return reflect.DeepEqual(a, b)
}

// fromBus decodes the properties read from (or signalled by) the bus.
// Types that do not match are left at their zero value: a newer systemd
// that changes one must not stop the watch.
func fromBus(name, path string, p map[string]dbus.Variant) snapshot {
	u := event.Unit{Name: name, Path: path}
	str := func(k string) string { s, _ := p[k].Value().(string); return s }
	u.LoadState, u.ActiveState, u.SubState, u.Result = str("LoadState"), str("ActiveState"), str("SubState"), str("Result")
	if n, ok := p["NRestarts"].Value().(uint32); ok {
		u.NRestarts = int(n)
	}
	if n, ok := p["MainPID"].Value().(uint32); ok {
		u.MainPID = int(n)
	}
	if b, ok := p["InvocationID"].Value().([]byte); ok && len(b) > 0 {
		u.InvocationID = hex.EncodeToString(b)
	}
	u.ExecMainStart = usec(p["ExecMainStartTimestamp"])
	u.Environment = strs(p["Environment"])
	u.DropInPaths = strs(p["DropInPaths"])
	u.NeedDaemonReload, _ = p["NeedDaemonReload"].Value().(bool)
	u.ExecStart = execStart(p["ExecStart"])
	return snapshot{unit: u, stateChange: usec(p["StateChangeTimestamp"])}
}

// usec decodes a systemd realtime timestamp (µs since the epoch; 0 = never).
func usec(v dbus.Variant) time.Time {
	n, ok := v.Value().(uint64)
	if !ok || n == 0 || n > 1<<62 {
		return time.Time{}
	}
	return time.UnixMicro(int64(n)).UTC()
}

func strs(v dbus.Variant) []string {
	s, _ := v.Value().([]string)
	if len(s) == 0 {
		return nil
	}
	return s
}

// execStart renders the argv of the first ExecStart= entry, a(sasbttttuii)
// on the bus: (path, argv, ignore-errors, start/stop times, pid, code, status).
func execStart(v dbus.Variant) string {
	rows, ok := v.Value().([][]any)
	if !ok || len(rows) == 0 || len(rows[0]) < 2 {
		return ""
	}
	argv, _ := rows[0][1].([]string)
	return strings.Join(argv, " ")
}

// readBus reads the unit's properties at path: GetAll of the Unit
// interface and, for a service, of the Service interface, both sent at
// once (one round trip; see sendRead and takeRead). It also returns the
// lowest receive sequence of the answers: signals received before it are
// older than everything read.
func readBus(ctx context.Context, conn *dbus.Conn, unit string, path dbus.ObjectPath) (map[string]dbus.Variant, dbus.Sequence, error) {
	ifaces := readIfaces(unit)
	done := make(chan *dbus.Call, len(ifaces))
	calls := sendRead(ctx, conn, path, ifaces, done)
	for range calls {
		<-done // every call ends: answered, failed, or cancelled with ctx
	}
	return takeRead(unit, ifaces, calls)
}

// readIfaces are the interfaces read for unit: the Unit interface and,
// for a service, the Service interface.
func readIfaces(unit string) []string {
	if strings.HasSuffix(unit, ".service") {
		return []string{unitIface, serviceIface}
	}
	return []string{unitIface}
}

// sendRead sends a GetAll of each interface of the unit at path, done
// told of each call's end.
func sendRead(ctx context.Context, conn *dbus.Conn, path dbus.ObjectPath, ifaces []string, done chan *dbus.Call) []*dbus.Call {
	obj := conn.Object(busName, path)
	calls := make([]*dbus.Call, len(ifaces))
	for i, iface := range ifaces {
		calls[i] = obj.GoWithContext(ctx, propsIface+".GetAll", 0, done, iface)
	}
	return calls
}

// takeRead is what the ended GetAll calls of sendRead read, less what
// fromBus does not use, and the lowest receive sequence of their answers.
// The answers' maps are taken as godbus decoded them, not stored into new
// ones: that copy, by reflection, was 11 % of the client's CPU samples
// before a 256-host table was full. A Get per property instead was
// measured and is worse on every side (BenchmarkReadBus: about 7x the
// wall time, more of systemd's CPU, 5x dbus-daemon's).
func takeRead(unit string, ifaces []string, calls []*dbus.Call) (map[string]dbus.Variant, dbus.Sequence, error) {
	all := make(map[string]dbus.Variant, len(showProps))
	var seq dbus.Sequence
	for i, c := range calls {
		if c.Err != nil {
			return nil, 0, fmt.Errorf("get properties of %s (%s): %w", unit, ifaces[i], c.Err)
		}
		m, ok := answer(c)
		if !ok {
			return nil, 0, fmt.Errorf("get properties of %s (%s): answer of signature %q, want a{sv}", unit, ifaces[i], dbus.SignatureOf(c.Body...))
		}
		keep(all, m)
		if i == 0 || c.ResponseSequence < seq {
			seq = c.ResponseSequence
		}
	}
	return all, seq, nil
}

// answer is a GetAll's properties as godbus decoded them.
func answer(c *dbus.Call) (map[string]dbus.Variant, bool) {
	if len(c.Body) != 1 {
		return nil, false
	}
	m, ok := c.Body[0].(map[string]dbus.Variant)
	return m, ok
}

// readProp reads one property of the unit at path.
func readProp(ctx context.Context, conn *dbus.Conn, path dbus.ObjectPath, iface, name string) (dbus.Variant, error) {
	var v dbus.Variant
	if err := conn.Object(busName, path).CallWithContext(ctx, propsIface+".Get", 0, iface, name).Store(&v); err != nil {
		return dbus.Variant{}, fmt.Errorf("get %s: %w", name, err)
	}
	return v, nil
}

// keep copies into dst the properties of src that fromBus reads; the
// rest (a service has some 250) is dropped.
func keep(dst, src map[string]dbus.Variant) {
	for _, k := range showProps {
		if v, ok := src[k]; ok {
			dst[k] = v
		}
	}
}
