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

// readBus reads the unit's properties at path: the Unit interface and,
// for a service, the Service interface. It also returns the receive
// sequence of the first answer: signals received before it are older than
// what was read.
func readBus(ctx context.Context, conn *dbus.Conn, unit string, path dbus.ObjectPath) (map[string]dbus.Variant, dbus.Sequence, error) {
	obj := conn.Object(busName, path)
	ifaces := []string{unitIface}
	if strings.HasSuffix(unit, ".service") {
		ifaces = append(ifaces, serviceIface)
	}
	all := map[string]dbus.Variant{}
	var seq dbus.Sequence
	for i, iface := range ifaces {
		var m map[string]dbus.Variant
		call := obj.CallWithContext(ctx, propsIface+".GetAll", 0, iface)
		if err := call.Store(&m); err != nil {
			return nil, 0, fmt.Errorf("get properties of %s (%s): %w", unit, iface, err)
		}
		if i == 0 {
			seq = call.ResponseSequence
		}
		keep(all, m)
	}
	return all, seq, nil
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
