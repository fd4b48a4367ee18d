package systemd

import (
	"context"

	sd "github.com/coreos/go-systemd/v22/dbus"
	"github.com/godbus/dbus/v5"
)

// unitObjectPath is the object path systemd gives unit: its name escaped
// as systemd escapes bus labels.
func unitObjectPath(unit string) dbus.ObjectPath {
	return dbus.ObjectPath("/org/freedesktop/systemd1/unit/" + sd.PathBusEscape(unit))
}

// watchMatches are the signal matches of a watch on the unit at path: its
// PropertiesChanged, and the manager's Reloading (a daemon-reload changes
// properties without signalling them).
func watchMatches(path dbus.ObjectPath) []string {
	return []string{
		"type='signal',path='" + string(path) + "',interface='" + propsIface + "',member='PropertiesChanged'",
		"type='signal',path='" + string(managerPath) + "',interface='" + managerIface + "',member='Reloading'",
	}
}

// subscribeUnit starts a watch of unit on conn, whose Hello openBus left
// to it: Hello, LoadUnit, the signal matches, systemd's Subscribe
// (systemd sends unit signals only while some client is subscribed; the
// subscription ends with the connection) and the unit's properties
// (readBus's GetAlls), all sent at once and answered in one round trip.
// In turn they were six round trips (the GetAlls already went together):
// traced at 256 hosts reached at once, 1.2 s of a host's 4.9 s to its row
// at p50, a round trip 210-260 ms at p50 and 440-680 ms at p90. The
// order is kept: D-Bus delivers one sender's messages in order, so the
// matches and the subscription are in place before systemd reads the
// properties, as when each waited for the one before. The unit's path is
// systemd's escaping of its name (systemd loads a unit on the first call
// to its path, as LoadUnit does); should LoadUnit answer another path,
// the matches and the reads are sent again for that one. It returns the
// unit's path, its properties and the lowest receive sequence of their
// answers, or the step that failed and why.
func subscribeUnit(ctx context.Context, conn *dbus.Conn, unit string) (path dbus.ObjectPath, props map[string]dbus.Variant, cutoff dbus.Sequence, step string, err error) {
	guess := unitObjectPath(unit)
	ifaces := readIfaces(unit)
	done := make(chan *dbus.Call, 8)
	bus, mgr := conn.BusObject(), conn.Object(busName, managerPath)
	type sent struct {
		step string
		call *dbus.Call
	}
	calls := []sent{{"hello", bus.GoWithContext(ctx, "org.freedesktop.DBus.Hello", 0, done)}}
	load := mgr.GoWithContext(ctx, managerIface+".LoadUnit", 0, done, unit)
	calls = append(calls, sent{"load unit", load})
	for _, m := range watchMatches(guess) {
		calls = append(calls, sent{"add match", bus.GoWithContext(ctx, "org.freedesktop.DBus.AddMatch", 0, done, m)})
	}
	calls = append(calls, sent{"subscribe", mgr.GoWithContext(ctx, managerIface+".Subscribe", 0, done)})
	reads := sendRead(ctx, conn, guess, ifaces, done)
	for range len(calls) + len(reads) {
		<-done // every call ends: answered, failed, or cancelled with ctx
	}
	for _, c := range calls {
		if c.call.Err != nil {
			return "", nil, 0, c.step, c.call.Err
		}
	}
	if err := load.Store(&path); err != nil {
		return "", nil, 0, "load unit", err
	}
	if path != guess {
		// Not how systemd names units today; then the way it was done
		// before, in turn, at the path it gave.
		if err := conn.AddMatchSignalContext(ctx, dbus.WithMatchObjectPath(path),
			dbus.WithMatchInterface(propsIface), dbus.WithMatchMember("PropertiesChanged")); err != nil {
			return "", nil, 0, "add match", err
		}
		props, cutoff, err = readBus(ctx, conn, unit, path)
		if err != nil {
			return "", nil, 0, "read", err
		}
		return path, props, cutoff, "", nil
	}
	props, cutoff, err = takeRead(unit, ifaces, reads)
	if err != nil {
		return "", nil, 0, "read", err
	}
	return path, props, cutoff, "", nil
}
