package action

import (
	"slices"
	"strings"
	"testing"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote"
)

func command(t *testing.T, name string) Command {
	t.Helper()
	for _, c := range Commands() {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no command %q", name)
	return Command{}
}

// TestSplitArgs: a command's own arguments are told from host names (a
// kernel named like a host is a host).
func TestSplitArgs(t *testing.T) {
	cat := kernels.DefaultCatalog()
	kernel := cat.Kernels[0].Name
	isHost := func(s string) bool { return strings.HasPrefix(s, "gpu") || s == "rack-a" }
	for _, tc := range []struct {
		cmd         string
		args        []string
		names, rest string
	}{
		{"mode", []string{"gpu1", kernel + "=on", "rack-a"}, "gpu1 rack-a", kernel + "=on"},
		{"redeploy", []string{"gpu1", kernel}, "gpu1", kernel},
		{"restart", []string{"gpu1", kernel}, "gpu1 " + kernel, ""},
	} {
		names, extra := command(t, tc.cmd).SplitArgs(cat, tc.args, isHost)
		if strings.Join(names, " ") != tc.names || strings.Join(extra, " ") != tc.rest {
			t.Errorf("%s %q: names %q, own %q; want %q, %q", tc.cmd, tc.args, names, extra, tc.names, tc.rest)
		}
	}
}

// TestBuild: each command's actions from its own arguments, and its
// refusals of arguments it does not take.
func TestBuild(t *testing.T) {
	cat := kernels.DefaultCatalog()
	kernel := cat.Kernels[0].Name
	for _, tc := range []struct {
		cmd   string
		extra []string
		o     Options
		want  []remote.Action
		err   string
	}{
		{cmd: "mode", extra: []string{kernel + "=on"}, o: Options{Runtime: true},
			want: []remote.Action{{Kind: remote.ActSetMode, Kernel: kernel, Mode: "on", Runtime: true}}},
		{cmd: "mode", err: "want exactly one KERNEL=MODE (got 0)"},
		{cmd: "redeploy", want: []remote.Action{{Kind: remote.ActRedeploy, Kernel: kernel}}},
		{cmd: "redeploy", extra: []string{"a", "b"}, err: "one kernel at a time (got a, b)"},
		{cmd: "restart"},
		{cmd: "stop", want: []remote.Action{{Kind: remote.ActStop}}},
		{cmd: "reset-failed", extra: []string{"x"}, err: `unexpected argument "x"`},
	} {
		got, err := command(t, tc.cmd).Build(cat, tc.extra, tc.o)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("%s %q: err %v, want %q", tc.cmd, tc.extra, err, tc.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%s %q: %v, %v; want %v", tc.cmd, tc.extra, got, err, tc.want)
		}
	}
}

// TestSimHosts: names are checked against the simulated hosts; all names
// them all; none is an error.
func TestSimHosts(t *testing.T) {
	known := []string{"gpu1", "gpu2"}
	if got, err := SimHosts(known, nil, true); err != nil || !slices.Equal(got, known) {
		t.Errorf("all: %v, %v", got, err)
	}
	if got, err := SimHosts(known, []string{"gpu2"}, false); err != nil || !slices.Equal(got, []string{"gpu2"}) {
		t.Errorf("gpu2: %v, %v", got, err)
	}
	if _, err := SimHosts(known, []string{"gpu9"}, false); err == nil || err.Error() != `unknown host "gpu9" (simulated hosts: gpu1, gpu2)` {
		t.Errorf("gpu9: %v", err)
	}
	if _, err := SimHosts(known, nil, false); err == nil || !strings.Contains(err.Error(), "name the hosts") {
		t.Errorf("none: %v", err)
	}
}
