package systemd

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
	"golang.org/x/crypto/ssh"

	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/unitname"
)

// showRunning is `systemctl show` of a running unit on systemd 252
// (testbed, with a drop-in that quotes).
const showRunning = `MainPID=54
Result=success
NRestarts=2
ExecMainStartTimestamp=Mon 2026-11-30 01:51:48.934830 UTC
ExecStart={ path=/usr/local/bin/infersim ; argv[]=/usr/local/bin/infersim --model-path /models/demo --port 30000 --tp 8 ; ignore_errors=no ; start_time=[Mon 2026-11-30 01:51:48.934181 UTC] ; stop_time=[n/a] ; pid=54 ; code=(null) ; status=0/0 }
Environment=KDTREE_MODE=off PYTHONPATH=/opt/kdtree/site "SP=a b" "Q=it's" "BS=x\\y"
Id=sglang.service
LoadState=loaded
ActiveState=active
SubState=running
DropInPaths=/run/systemd/system/sglang.service.d/t.conf /etc/systemd/system/sglang.service.d/50-kdtree.conf
StateChangeTimestamp=Mon 2026-11-30 01:51:48.938183 UTC
ActiveEnterTimestamp=Mon 2026-11-30 01:51:48.938183 UTC
InactiveEnterTimestamp=
NeedDaemonReload=yes
InvocationID=fc7ea259a2674827867292ec999f84af
`

// showNever is a unit that never ran.
const showNever = `MainPID=0
Result=success
NRestarts=0
ExecMainStartTimestamp=
Environment=
Id=sglang.service
ActiveState=inactive
SubState=dead
DropInPaths=
StateChangeTimestamp=
NeedDaemonReload=no
InvocationID=
`

// showMissing is `systemctl show` of a unit the host does not have.
var showMissing = strings.Replace(showNever, "ActiveState=", "LoadState=not-found\nActiveState=", 1)

func TestParseShow(t *testing.T) {
	s, err := parseShow("sglang.service", []byte(showRunning))
	if err != nil {
		t.Fatal(err)
	}
	want := event.Unit{
		Name: "sglang.service", LoadState: "loaded", ActiveState: "active", SubState: "running", Result: "success",
		InvocationID: "fc7ea259a2674827867292ec999f84af", NRestarts: 2, MainPID: 54,
		ExecMainStart:    time.Date(2026, 11, 30, 1, 51, 48, 934830000, time.UTC),
		Environment:      []string{"KDTREE_MODE=off", "PYTHONPATH=/opt/kdtree/site", "SP=a b", "Q=it's", `BS=x\y`},
		DropInPaths:      []string{"/run/systemd/system/sglang.service.d/t.conf", "/etc/systemd/system/sglang.service.d/50-kdtree.conf"},
		NeedDaemonReload: true,
		ExecStart:        "/usr/local/bin/infersim --model-path /models/demo --port 30000 --tp 8",
		Path:             PathSystemctl,
	}
	if !sameUnit(s.unit, want) {
		t.Errorf("got  %+v\nwant %+v", s.unit, want)
	}
	if w := time.Date(2026, 11, 30, 1, 51, 48, 938183000, time.UTC); !s.stateChange.Equal(w) {
		t.Errorf("state change %s, want %s", s.stateChange, w)
	}

	s, err = parseShow("sglang.service", []byte(showNever))
	if err != nil {
		t.Fatal(err)
	}
	if s.unit.Environment != nil || s.unit.DropInPaths != nil || !s.stateChange.IsZero() || !s.unit.ExecMainStart.IsZero() || s.unit.ActiveState != "inactive" {
		t.Errorf("never-run unit: %+v at %s", s.unit, s.stateChange)
	}

	// A unit the host does not have is not-found, not merely stopped.
	s, err = parseShow("sglang.service", []byte(showMissing))
	if err != nil {
		t.Fatal(err)
	}
	if s.unit.LoadState != "not-found" || s.unit.Loaded() || s.unit.State() != "not-found" {
		t.Errorf("missing unit: %+v, state %q", s.unit, s.unit.State())
	}
}

func TestParseShowErrors(t *testing.T) {
	for name, out := range map[string]string{
		"empty":       "",
		"other unit":  "Id=other.service\nActiveState=active\n",
		"bad count":   "NRestarts=lots\n",
		"bad time":    "StateChangeTimestamp=Monday noon\n",
		"local time":  "StateChangeTimestamp=Mon 2026-11-30 01:51:48 CET\n",
		"open quote":  "Environment=\"A=b\n",
		"dangling \\": "Environment=\"A=b\\",
	} {
		if _, err := parseShow("sglang.service", []byte(out)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func FuzzParseShow(f *testing.F) {
	f.Add([]byte(showRunning))
	f.Add([]byte(showNever))
	f.Add([]byte("Environment=\"a\\\"b\" c\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := parseShow("sglang.service", b)
		if err == nil && s.unit.Path != PathSystemctl {
			t.Fatalf("path %q", s.unit.Path)
		}
	})
}

func TestSplitQuoted(t *testing.T) {
	for in, want := range map[string][]string{
		``:                      nil,
		`A=1`:                   {"A=1"},
		`A=1  B=2 `:             {"A=1", "B=2"},
		`"A=x y" B=2`:           {"A=x y", "B=2"},
		`"T=a\tb" "Q=\"q\""`:    {"T=a\tb", `Q="q"`},
		`"E="`:                  {"E="},
		`pre"fix x"`:            {"prefix x"},
		`/a/b.conf /c/d e.conf`: {"/a/b.conf", "/c/d", "e.conf"},
	} {
		got, err := splitQuoted(in)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("splitQuoted(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

// TestWatchRefusesGlobForGood: Watch refuses a glob before it touches the
// host (the nil Dialer would panic otherwise), with an error that wraps
// unitname.ErrInvalid, which the host driver takes as permanent instead of
// retrying every 5 s.
func TestWatchRefusesGlobForGood(t *testing.T) {
	for _, unit := range []string{"sglang*", "sgl?ng.service", "sgl[ab].service", "sglang"} {
		err := Watch(context.Background(), nil, WatchOptions{Host: "gpu1", Unit: unit}, func(event.Event) bool { return true })
		if !errors.Is(err, unitname.ErrInvalid) || !strings.Contains(err.Error(), "gpu1") {
			t.Errorf("Watch(%q) = %v, want unitname.ErrInvalid naming the host", unit, err)
		}
	}
}

func TestFromBus(t *testing.T) {
	p := map[string]dbus.Variant{
		"LoadState":              dbus.MakeVariant("loaded"),
		"ActiveState":            dbus.MakeVariant("failed"),
		"SubState":               dbus.MakeVariant("failed"),
		"Result":                 dbus.MakeVariant("exit-code"),
		"NRestarts":              dbus.MakeVariant(uint32(3)),
		"MainPID":                dbus.MakeVariant(uint32(0)),
		"InvocationID":           dbus.MakeVariant([]byte{0xfc, 0x7e, 0xa2, 0x59}),
		"StateChangeTimestamp":   dbus.MakeVariant(uint64(1796003508938183)),
		"ExecMainStartTimestamp": dbus.MakeVariant(uint64(0)),
		"Environment":            dbus.MakeVariant([]string{"KDTREE_MODE=validate"}),
		"DropInPaths":            dbus.MakeVariant([]string{}),
		"NeedDaemonReload":       dbus.MakeVariant(true),
		"ExecStart": dbus.MakeVariant([][]any{{"/usr/local/bin/infersim", []string{"/usr/local/bin/infersim", "--tp", "8"}, false,
			uint64(0), uint64(0), uint64(0), uint64(0), uint32(0), int32(0), int32(0)}}),
		"SomethingNew": dbus.MakeVariant("ignored"),
	}
	s := fromBus("sglang.service", PathDBus, p)
	want := event.Unit{Name: "sglang.service", LoadState: "loaded", ActiveState: "failed", SubState: "failed", Result: "exit-code",
		InvocationID: "fc7ea259", NRestarts: 3, Environment: []string{"KDTREE_MODE=validate"}, NeedDaemonReload: true,
		ExecStart: "/usr/local/bin/infersim --tp 8", Path: PathDBus}
	if !sameUnit(s.unit, want) {
		t.Errorf("got  %+v\nwant %+v", s.unit, want)
	}
	if s.stateChange.UnixMicro() != 1796003508938183 {
		t.Errorf("state change %s", s.stateChange)
	}
	// A property of an unexpected type is left zero, not fatal.
	p["NRestarts"] = dbus.MakeVariant("three")
	if s := fromBus("sglang.service", PathDBus, p); s.unit.NRestarts != 0 {
		t.Errorf("NRestarts of a string: %d", s.unit.NRestarts)
	}
}

func TestApply(t *testing.T) {
	unit := dbus.ObjectPath("/org/freedesktop/systemd1/unit/sglang_2eservice")
	props := map[string]dbus.Variant{"ActiveState": dbus.MakeVariant("active"), "NRestarts": dbus.MakeVariant(uint32(0))}
	sig := func(path dbus.ObjectPath, iface string, changed map[string]dbus.Variant) *dbus.Signal {
		return &dbus.Signal{Path: path, Name: propsChanged, Body: []any{iface, changed, []string{"ExecStart"}}}
	}
	for _, c := range []struct {
		name         string
		s            *dbus.Signal
		emit, reread bool
	}{
		{"service half waits for its unit half", sig(unit, serviceIface, map[string]dbus.Variant{"NRestarts": dbus.MakeVariant(uint32(1)), "UID": dbus.MakeVariant(uint32(0))}), false, false},
		{"unit half emits", sig(unit, unitIface, map[string]dbus.Variant{"ActiveState": dbus.MakeVariant("activating")}), true, false},
		{"other object ignored", sig("/org/freedesktop/systemd1/unit/other", unitIface, map[string]dbus.Variant{"ActiveState": dbus.MakeVariant("failed")}), false, false},
		{"reload starts", &dbus.Signal{Path: managerPath, Name: reloadingName, Body: []any{true}}, false, false},
		{"reload ends", &dbus.Signal{Path: managerPath, Name: reloadingName, Body: []any{false}}, false, true},
	} {
		emit, reread := apply(props, c.s, unit)
		if emit != c.emit || reread != c.reread {
			t.Errorf("%s: emit %v reread %v, want %v %v", c.name, emit, reread, c.emit, c.reread)
		}
	}
	if props["ActiveState"].Value() != "activating" || props["NRestarts"].Value() != uint32(1) {
		t.Errorf("props after signals: %v", props)
	}
	if _, ok := props["UID"]; ok {
		t.Error("a property this package does not read was kept")
	}
}

func TestReportDedupesAndStamps(t *testing.T) {
	now := time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC)
	var got []event.Event
	w := &watcher{o: WatchOptions{Host: "gpu1", Now: func() time.Time { return now }}, emit: func(e event.Event) bool { got = append(got, e); return true }}
	changed := now.Add(-time.Second)
	env := []string{"A=1"}
	w.report(snapshot{unit: event.Unit{ActiveState: "active", SubState: "running", Environment: env}, stateChange: changed})
	w.report(snapshot{unit: event.Unit{ActiveState: "active", SubState: "running", Environment: []string{"A=1"}}, stateChange: changed})
	w.report(snapshot{unit: event.Unit{ActiveState: "active", SubState: "running", Environment: env, NRestarts: 1}, stateChange: changed})
	w.report(snapshot{unit: event.Unit{ActiveState: "failed", SubState: "failed", Environment: env, NRestarts: 1}})
	if len(got) != 3 {
		t.Fatalf("%d events, want 3 (one duplicate dropped)", len(got))
	}
	for i, at := range []time.Time{changed, now, now} {
		if !got[i].Time.Equal(at) || !got[i].Seen.Equal(now) || got[i].Host != "gpu1" || got[i].Kind != event.KindUnit {
			t.Errorf("event %d: %+v, want time %s", i, got[i], at)
		}
	}
	got[0].Unit.Environment[0] = "sanitised"
	if env[0] != "A=1" || w.last.Environment[0] != "A=1" {
		t.Error("an emitted event aliases the watcher's state")
	}
}

func TestOutcomesDistinct(t *testing.T) {
	seen := map[error]Outcome{}
	for _, o := range []Outcome{OutcomeCanceled, OutcomeTimeout, OutcomeFailed, OutcomeDependency, OutcomeSkipped} {
		err := error(&JobError{Host: "gpu1", Op: "restart", Unit: "sglang.service", Outcome: o})
		sentinel := outcomeErr(o)
		if !errors.Is(err, sentinel) {
			t.Errorf("%s: not errors.Is its sentinel", o)
		}
		if prev, dup := seen[sentinel]; dup {
			t.Errorf("%s and %s share an error", o, prev)
		}
		seen[sentinel] = o
	}
	if outcomeErr(OutcomeDone) != nil {
		t.Error("done is an error")
	}
	e := &JobError{Host: "gpu1", Op: "start", Unit: "x.service", Outcome: "assert"}
	if !errors.Is(e, ErrJobFailed) || !strings.Contains(e.Error(), "result assert") {
		t.Errorf("unknown result: %v", e)
	}
}

func TestJobOutcomeFromMessage(t *testing.T) {
	for msg, want := range map[string]Outcome{
		"Job for sglang.service failed because the control process exited with error code.\nSee \"systemctl status sglang.service\"": OutcomeFailed,
		"Job for sglang.service failed because a timeout was exceeded.":                                                              OutcomeTimeout,
		"Job for sglang.service canceled.":                                              OutcomeCanceled,
		"A dependency job for sglang.service failed. See 'journalctl -xe' for details.": OutcomeDependency,
		"Failed to restart sglang.service: Unit sglang.service not found.":              OutcomeNone,
	} {
		if got := jobOutcomeFromMessage(msg); got != want {
			t.Errorf("%q: %q, want %q", msg, got, want)
		}
	}
}

// fakeHost answers Exec from a table and has no bus.
type fakeHost struct {
	uid  string
	exec func(cmd string) (stdout, stderr string, code int)
	cmds []string
}

func (f *fakeHost) DialUnix(context.Context, string) (net.Conn, error) {
	return nil, errors.New("administratively prohibited")
}
func (f *fakeHost) Client(context.Context) (*ssh.Client, error) { return nil, errors.New("no client") }

// ExecTerm is Exec: the table has nothing to stop.
func (f *fakeHost) ExecTerm(ctx context.Context, cmd string) ([]byte, []byte, int, error) {
	return f.Exec(ctx, cmd)
}
func (f *fakeHost) Exec(_ context.Context, cmd string) ([]byte, []byte, int, error) {
	f.cmds = append(f.cmds, cmd)
	if cmd == "id -u" {
		return []byte(f.uid + "\n"), nil, 0, nil
	}
	o, e, c := f.exec(cmd)
	return []byte(o), []byte(e), c, nil
}

func TestControllerSudo(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		stderr string
		code   int
		want   error
		msg    string
	}{
		{"sudo: a password is required\n", 1, ErrSudoPassword, "sudo needs a password on gpu2: actions need the NOPASSWD sudoers rule that `bringup doctor gpu2` prints (or a root login)"},
		{"sudo: sorry, you must have a tty to run sudo\n", 1, ErrSudoTTY, "sudo requires a terminal on gpu2"},
		{"deploy is not in the sudoers file.  This incident will be reported.\n", 1, ErrSudoDenied, "sudo refused the command on gpu2"},
		{"Job for sglang.service failed because the control process exited with error code.\n", 1, ErrJobFailed, "gpu2: restart sglang.service: job failed"},
		{"", 0, nil, ""},
	} {
		h := &fakeHost{uid: "1000", exec: func(string) (string, string, int) { return "", c.stderr, c.code }}
		o, err := NewController(h, "gpu2").Restart(ctx, "sglang.service")
		if !errors.Is(err, c.want) || (err != nil && !strings.HasPrefix(err.Error(), c.msg)) {
			t.Errorf("stderr %q: %q, %v; want %v %q", c.stderr, o, err, c.want, c.msg)
		}
		if got := h.cmds[len(h.cmds)-1]; got != "sudo -n -- systemctl --no-ask-password restart -- sglang.service" {
			t.Errorf("command %q", got)
		}
	}
}

func TestControllerRootWithoutBus(t *testing.T) {
	h := &fakeHost{uid: "0", exec: func(string) (string, string, int) { return "", "", 0 }}
	c := NewController(h, "gpu1")
	ctx := context.Background()
	if err := c.DaemonReload(ctx); err != nil {
		t.Fatal(err)
	}
	if o, err := c.Stop(ctx, "sglang.service"); o != OutcomeDone || err != nil {
		t.Fatalf("stop: %q, %v", o, err)
	}
	want := []string{"id -u", "systemctl --no-ask-password daemon-reload", "systemctl --no-ask-password stop -- sglang.service"}
	if !slices.Equal(h.cmds, want) {
		t.Errorf("commands %q, want %q (uid asked once, no sudo for root)", h.cmds, want)
	}
	if _, err := c.Restart(ctx, "x;reboot"); err == nil {
		t.Error("a unit name with a shell metacharacter was accepted")
	}
}

func TestWatchSystemctlFallback(t *testing.T) {
	h := &fakeHost{uid: "1000", exec: func(cmd string) (string, string, int) {
		if strings.HasPrefix(cmd, "systemctl show") {
			return showRunning, "", 0
		}
		return "", "unexpected", 1
	}}
	var path string
	var why error
	var got []event.Event
	err := Watch(context.Background(), h, WatchOptions{Host: "gpu1", Unit: "sglang.service",
		OnPath: func(p string, w error) { path, why = p, w }},
		func(e event.Event) bool { got = append(got, e); return false })
	if err != nil {
		t.Fatal(err)
	}
	if path != PathSystemctl || why == nil || !strings.Contains(why.Error(), "administratively prohibited") {
		t.Errorf("path %q why %v", path, why)
	}
	if len(got) != 1 || got[0].Unit.Path != PathSystemctl || got[0].Unit.ActiveState != "active" {
		t.Errorf("events %+v", got)
	}
}

// TestTrimOutSanitizes: remote stderr quoted in an error (systemctl, sudo,
// systemd-stdio-bridge) goes through the one sanitiser, so the error can
// be printed to a terminal as it is.
func TestTrimOutSanitizes(t *testing.T) {
	got := trimOut([]byte("  Failed: \x1b]0;pwned\x07 \x1b[2J \u009b31m\n" + strings.Repeat("x", 400)))
	if strings.ContainsAny(got, "\x1b\x07\u009b") || !strings.HasPrefix(got, "Failed: ␛]0;pwned␇ ␛[2J") || len(got) > 300+len(" …[cut]") {
		t.Errorf("trimOut = %q", got)
	}
}

// A relaxed host (steady, its view closed) reads NeedDaemonReload every
// relaxedReconcile-th tick, any other every tick; the count starts over
// after each read, so a host that turns relaxed waits from its last read.
func TestReconcileDue(t *testing.T) {
	for _, tc := range []struct {
		relaxed bool
		ticks   int
		want    bool
	}{
		{false, 1, true},
		{false, relaxedReconcile, true},
		{true, 1, false},
		{true, relaxedReconcile - 1, false},
		{true, relaxedReconcile, true},
		{true, relaxedReconcile + 3, true}, // turned relaxed with ticks counted: read at once
	} {
		if got := reconcileDue(tc.relaxed, tc.ticks); got != tc.want {
			t.Errorf("reconcileDue(relaxed %v, %d ticks) = %v, want %v", tc.relaxed, tc.ticks, got, tc.want)
		}
	}
}

// TestUnitObjectPath: systemd's object paths of units, as busctl lists
// them: every byte but [A-Za-z0-9] as _ and two hex digits, a leading
// digit too.
func TestUnitObjectPath(t *testing.T) {
	for unit, want := range map[string]string{
		"sglang.service":           "/org/freedesktop/systemd1/unit/sglang_2eservice",
		"systemd-journald.service": "/org/freedesktop/systemd1/unit/systemd_2djournald_2eservice",
		"getty@tty1.service":       "/org/freedesktop/systemd1/unit/getty_40tty1_2eservice",
		"multi-user.target":        "/org/freedesktop/systemd1/unit/multi_2duser_2etarget",
		"1gpu.service":             "/org/freedesktop/systemd1/unit/_31gpu_2eservice",
	} {
		if got := unitObjectPath(unit); string(got) != want {
			t.Errorf("unitObjectPath(%q) = %s, want %s", unit, got, want)
		}
	}
}
