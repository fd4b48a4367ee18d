package doctor

import (
	"strings"
	"testing"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/live"
	"github.com/bringup-dev/bringup/remote/sshx"
)

// fakeSudo answers the doctor's sudo check as a host whose sudo allows
// the commands allow says (nil: all), or wants a password for all.
type fakeSudo struct {
	password bool
	allow    func(cmd string) bool
	noRsync  bool
}

func (f fakeSudo) exec(cmd string) (string, string, int, error) {
	switch {
	case cmd == "id -un":
		return "deploy", "", 0, nil
	case strings.HasPrefix(cmd, "command -v "):
		var out []string
		for _, line := range strings.Split(strings.TrimSpace(cmd), "\n") {
			tool := strings.Fields(line)[2]
			if tool == "rsync" && f.noRsync {
				out = append(out, "-")
				continue
			}
			out = append(out, "/usr/bin/"+tool)
		}
		return strings.Join(out, "\n"), "", 0, nil
	}
	var codes []string
	for _, line := range strings.Split(strings.TrimSpace(cmd), "\n") {
		c, _, _ := strings.Cut(strings.TrimPrefix(line, "sudo -n -l -- "), " >/dev/null")
		switch {
		case f.password:
			return "", "sudo: a password is required", 1, nil
		case f.allow == nil || f.allow(c):
			codes = append(codes, "0")
		default:
			codes = append(codes, "1")
		}
	}
	return strings.Join(codes, "\n"), "", 0, nil
}

func TestSudoCheck(t *testing.T) {
	r := live.Options{Host: remote.Host{Name: "gpu1", Unit: "sglang.service"}, Kernels: kernels.DefaultCatalog()}
	rule, err := sshx.SudoersRule(Scope(r, "deploy", nil))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name     string
		host     fakeSudo
		status   Status
		detail   string
		wantRule bool
	}{
		{"all allowed", fakeSudo{}, OK, "deploy may run the 27 root commands", false},
		{"password", fakeSudo{password: true}, Warn, "sudo on gpu1 needs a password for deploy", true},
		{"only systemctl (the old advice)", fakeSudo{allow: func(c string) bool { return strings.HasPrefix(c, "systemctl ") }},
			Warn, "sudo lets deploy run 5 of the 27 root commands actions use; refused: mkdir -p -- /etc/systemd/system/sglang.service.d and 21 more", true},
		{"no rsync", fakeSudo{noRsync: true}, Warn, "not on the host: rsync", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := sudoCheck(c.host.exec, r)
			if got.Name != "sudo" || got.Status != c.status || !strings.Contains(got.Detail, c.detail) {
				t.Fatalf("check %+v, want %v with %q", got, c.status, c.detail)
			}
			if has := strings.Contains(got.Fix, indent(rule)); has != c.wantRule {
				t.Errorf("fix carries the rule: %v, want %v:\n%s", has, c.wantRule, got.Fix)
			}
			if strings.Contains(got.Fix, "NOPASSWD for systemctl") {
				t.Errorf("the old, too narrow advice: %s", got.Fix)
			}
		})
	}
}
