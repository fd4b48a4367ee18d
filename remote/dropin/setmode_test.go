package dropin

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote/systemd"
)

// fakeHost answers the commands SetMode sends: a login with uid, a drop-in
// that may exist, and a scripted sudo refusal.
type fakeHost struct {
	uid     string
	file    string // current drop-in; "" = none
	sudoErr string // stderr of every sudo command, with exit 1
	temp    []byte // what the install step wrote to the temp file
	cmds    []string
}

func (f *fakeHost) Exec(_ context.Context, cmd string) ([]byte, []byte, int, error) {
	f.cmds = append(f.cmds, cmd)
	switch {
	case cmd == "id -u":
		return []byte(f.uid + "\n"), nil, 0, nil
	case strings.HasPrefix(cmd, "sudo ") && f.sudoErr != "":
		return nil, []byte(f.sudoErr), 1, nil
	case strings.Contains(cmd, " | base64 -d | "):
		word, _, _ := strings.Cut(strings.TrimPrefix(cmd, "printf %s "), " ")
		b, err := base64.StdEncoding.DecodeString(word)
		if err != nil {
			return nil, []byte(err.Error()), 1, nil
		}
		f.temp = b
	case strings.HasPrefix(cmd, "sync -- ") && strings.Contains(cmd, "&& cat -- "):
		return f.temp, nil, 0, nil
	case strings.Contains(cmd, "NeedDaemonReload"):
		return []byte("no\n"), nil, 0, nil
	case strings.Contains(cmd, "printf 1"):
		if f.file == "" {
			return []byte("0"), nil, 0, nil
		}
		return []byte("1" + f.file), nil, 0, nil
	}
	return nil, nil, 0, nil
}

// fakeCtl is a unit whose Environment after the reload is scripted.
type fakeCtl struct {
	before, after []string
	reloads       int
}

func (c *fakeCtl) DaemonReload(context.Context) error { c.reloads++; return nil }

func (c *fakeCtl) ReadEnvironment(context.Context, string) ([]string, error) {
	if c.reloads == 0 {
		return c.before, nil
	}
	return c.after, nil
}

func TestSetModeSteps(t *testing.T) {
	k := kernels.DefaultCatalog().Kernels[0]
	base := []string{"PYTHONPATH=/opt/kdtree/site:/srv", "KDTREE_MODE=validate", "OTHER=1"}
	tests := []struct {
		name    string
		host    fakeHost
		after   []string
		wantErr func(error) bool
	}{
		{"root, verified", fakeHost{uid: "0"}, []string{"PYTHONPATH=/opt/kdtree/site:/srv", "KDTREE_MODE=on", "OTHER=1"}, func(err error) bool { return err == nil }},
		{"non-root goes through sudo", fakeHost{uid: "1000"}, []string{"PYTHONPATH=/opt/kdtree/site:/srv", "KDTREE_MODE=on", "OTHER=1"}, func(err error) bool { return err == nil }},
		{"sudo wants a password", fakeHost{uid: "1000", sudoErr: "sudo: a password is required\n"}, nil, func(err error) bool {
			var se *systemd.SudoError
			return errors.As(err, &se) && errors.Is(err, systemd.ErrSudoPassword)
		}},
		{"a later drop-in overrides the mode", fakeHost{uid: "0"}, []string{"PYTHONPATH=/opt/kdtree/site:/srv", "KDTREE_MODE=validate", "OTHER=1"}, func(err error) bool {
			var ve *VerifyError
			return errors.As(err, &ve) && ve.Key == "KDTREE_MODE" && ve.Got == "validate" && strings.Contains(err.Error(), "60-bringup-kdtree-verify.conf")
		}},
		{"PYTHONPATH overridden", fakeHost{uid: "0"}, []string{"PYTHONPATH=/srv", "KDTREE_MODE=on", "OTHER=1"}, func(err error) bool {
			var ve *VerifyError
			return errors.As(err, &ve) && ve.Key == "PYTHONPATH"
		}},
		{"another variable changed", fakeHost{uid: "0"}, []string{"PYTHONPATH=/opt/kdtree/site:/srv", "KDTREE_MODE=on"}, func(err error) bool {
			var ve *VerifyError
			return errors.As(err, &ve) && ve.Key == "OTHER" && ve.Missing
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := tt.host
			ctl := &fakeCtl{before: base, after: tt.after}
			c, err := SetMode(context.Background(), &h, ctl, "sglang.service", k, "on", SetOptions{Host: "gpu9"})
			if !tt.wantErr(err) {
				t.Fatalf("err = %v", err)
			}
			if err == nil && ctl.reloads != 1 {
				t.Errorf("%d daemon-reloads, want 1", ctl.reloads)
			}
			if c.Host != "gpu9" || c.Path != "/etc/systemd/system/sglang.service.d/60-bringup-kdtree-verify.conf" {
				t.Errorf("change %+v", c)
			}
			checkPrivileged(t, h.uid != "0", h.cmds)
		})
	}
}

// checkPrivileged checks that each step that needs root is one of sshx's
// fixed commands, through `sudo -n --` exactly when sudo is true, and that
// no command hands a script to a root shell.
func checkPrivileged(t *testing.T, sudo bool, cmds []string) {
	t.Helper()
	for _, cmd := range cmds {
		if strings.Contains(cmd, "sh -c") {
			t.Errorf("a shell script as root: %q", cmd)
		}
		for _, seg := range strings.FieldsFunc(strings.NewReplacer(" && ", "\x00", " | ", "\x00").Replace(cmd), func(r rune) bool { return r == 0 }) {
			tool, _, _ := strings.Cut(strings.TrimPrefix(seg, "sudo -n -- "), " ")
			root := tool == "mkdir" || tool == "rm" || tool == "install" || tool == "mv" || tool == "cat" && strings.Contains(seg, "/proc/")
			if root && sudo != strings.HasPrefix(seg, "sudo -n -- ") || !root && strings.HasPrefix(seg, "sudo") {
				t.Errorf("sudo %v: step %q of %q", sudo, seg, cmd)
			}
		}
	}
}

func TestUndoRefusesAChangedFile(t *testing.T) {
	k := kernels.DefaultCatalog().Kernels[0]
	h := &fakeHost{uid: "0", file: "[Service]\nEnvironment=KDTREE_MODE=off\n"}
	c := Change{Host: "gpu9", Unit: "sglang.service", Kernel: k.Name, Mode: "on", Path: kernels.DropInPath("sglang.service", k.Name, false), New: []byte("other")}
	err := Undo(context.Background(), h, &fakeCtl{}, c, k, SetOptions{})
	if !errors.Is(err, ErrChanged) {
		t.Fatalf("err = %v, want ErrChanged", err)
	}
}

func TestBadNamesNeverReachTheHost(t *testing.T) {
	k := kernels.DefaultCatalog().Kernels[0]
	h := &fakeHost{uid: "0"}
	for _, u := range []string{"../x.service", "a b.service", "x'.service"} {
		if _, err := SetMode(context.Background(), h, &fakeCtl{}, u, k, "on", SetOptions{}); err == nil {
			t.Errorf("SetMode(%q) = nil error", u)
		}
	}
	if _, err := SetMode(context.Background(), h, &fakeCtl{}, "sglang.service", k, "turbo", SetOptions{}); err == nil {
		t.Error("unknown mode accepted")
	}
	if len(h.cmds) != 0 {
		t.Errorf("commands sent: %q", h.cmds)
	}
}
