package sshx

import (
	"strings"
	"testing"
)

// TestSudoersRule pins the rule for the testbed's shape of host: one line
// per command, absolute tool paths, no shell, no wildcard but the pid
// digits of the environ reads.
func TestSudoersRule(t *testing.T) {
	s := Scope{
		User:       "deploy",
		Units:      []string{"sglang.service"},
		DropIns:    []string{"/etc/systemd/system/sglang.service.d/60-bringup-kdtree-verify.conf"},
		KernelDirs: []string{"/opt/kdtree/site"},
		RecordDir:  "/var/lib/bringup/deployed",
		Tools:      map[string]string{"rsync": "/usr/local/bin/rsync"},
	}
	rule, err := SudoersRule(s)
	if err != nil {
		t.Fatal(err)
	}
	const p = "deploy ALL=(root) NOPASSWD: "
	want := []string{
		p + "/usr/bin/systemctl --no-ask-password daemon-reload",
		p + "/usr/bin/systemctl --no-ask-password restart -- sglang.service",
		p + "/usr/bin/systemctl --no-ask-password start -- sglang.service",
		p + "/usr/bin/systemctl --no-ask-password stop -- sglang.service",
		p + "/usr/bin/systemctl --no-ask-password reset-failed -- sglang.service",
		p + "/usr/bin/mkdir -p -- /etc/systemd/system/sglang.service.d",
		p + "/usr/bin/rm -f -- /etc/systemd/system/sglang.service.d/.bringup-60-bringup-kdtree-verify.conf.tmp",
		p + "/usr/bin/install -m 0644 -T -- /dev/stdin /etc/systemd/system/sglang.service.d/.bringup-60-bringup-kdtree-verify.conf.tmp",
		p + "/usr/bin/mv -f -T -- /etc/systemd/system/sglang.service.d/.bringup-60-bringup-kdtree-verify.conf.tmp /etc/systemd/system/sglang.service.d/60-bringup-kdtree-verify.conf",
		p + "/usr/bin/rm -f -- /etc/systemd/system/sglang.service.d/60-bringup-kdtree-verify.conf",
		p + "/usr/bin/cat -- /proc/[0-9]/environ",
		p + "/usr/bin/cat -- /proc/[0-9][0-9]/environ",
		p + "/usr/bin/cat -- /proc/[0-9][0-9][0-9]/environ",
		p + "/usr/bin/cat -- /proc/[0-9][0-9][0-9][0-9]/environ",
		p + "/usr/bin/cat -- /proc/[0-9][0-9][0-9][0-9][0-9]/environ",
		p + "/usr/bin/cat -- /proc/[0-9][0-9][0-9][0-9][0-9][0-9]/environ",
		p + "/usr/bin/cat -- /proc/[0-9][0-9][0-9][0-9][0-9][0-9][0-9]/environ",
		p + "/usr/bin/rm -rf -- /opt/kdtree/.site.bringup-stage",
		p + "/usr/bin/mkdir -p -- /opt/kdtree/.site.bringup-stage /opt/kdtree/site /var/lib/bringup/deployed",
		p + "/usr/bin/tar -x --no-same-owner -f - -C /opt/kdtree/.site.bringup-stage",
		p + "/usr/local/bin/rsync -r --ignore-times --perms --delay-updates --delete --force --from0 --include-from\\=- -- /opt/kdtree/.site.bringup-stage/files/ /opt/kdtree/site/",
		p + "/usr/local/bin/rsync --ignore-times --perms -- /opt/kdtree/.site.bringup-stage/record.json /var/lib/bringup/deployed/opt-kdtree-site.json",
	}
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(rule), "\n") {
		if !strings.HasPrefix(l, "#") {
			got = append(got, l)
		}
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("rule:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, bad := range []string{"NOPASSWD: ALL", "(ALL)", "sh -c", "*"} {
		if strings.Contains(rule, bad) {
			t.Errorf("rule contains %q", bad)
		}
	}
}

// TestSudoersEscapes checks the escapes sudoers needs in arguments and
// the names no rule can hold plainly.
func TestSudoersEscapes(t *testing.T) {
	s := Scope{User: "deploy", Units: []string{`sglang@gpu:0\x2d1.service`}}
	rule, err := SudoersRule(s)
	if err != nil {
		t.Fatal(err)
	}
	if want := `restart -- sglang@gpu\:0\\x2d1.service`; !strings.Contains(rule, want) {
		t.Errorf("rule lacks %s:\n%s", want, rule)
	}
	for _, bad := range []Scope{
		{User: "deploy", Units: []string{"a b.service"}},
		{User: "deploy", Units: []string{"a*.service"}},
		{User: "deploy", KernelDirs: []string{"/opt/it's"}},
		{User: "de ploy"},
		{User: "ALL"},
		{User: "deploy", Tools: map[string]string{"systemctl": "systemctl"}},
	} {
		if r, err := SudoersRule(bad); err == nil {
			t.Errorf("%+v: rendered\n%s", bad, r)
		}
	}
}

// TestRootCmdLines checks that a root command is sent exactly as the rule
// names it: sudo -n, no shell, arguments quoted only where the shell
// needs it.
func TestRootCmdLines(t *testing.T) {
	for _, c := range []struct {
		cmd  RootCmd
		sudo bool
		want string
	}{
		{UnitCmd(VerbRestart, "sglang.service"), true, "sudo -n -- systemctl --no-ask-password restart -- sglang.service"},
		{UnitCmd(VerbStop, "sglang.service"), false, "systemctl --no-ask-password stop -- sglang.service"},
		{EnvironCmd(4242), true, "sudo -n -- cat -- /proc/4242/environ"},
		{DropInRemoveCmd("/etc/x.d/it's.conf"), true, `sudo -n -- rm -f -- '/etc/x.d/it'\''s.conf'`},
		{DeployApplyCmd("/opt/k/site"), true, "sudo -n -- rsync -r --ignore-times --perms --delay-updates --delete --force --from0 --include-from=- -- /opt/k/.site.bringup-stage/files/ /opt/k/site/"},
	} {
		if got := c.cmd.Line(c.sudo); got != c.want {
			t.Errorf("Line = %q, want %q", got, c.want)
		}
	}
	if got := DaemonReloadCmd().CheckLine(); got != "sudo -n -l -- systemctl --no-ask-password daemon-reload" {
		t.Errorf("CheckLine = %q", got)
	}
	if got := DeployRecordFile("/var/lib/bringup/deployed", "/opt/it's site"); got != `/var/lib/bringup/deployed/opt-it\x27s\x20site.json` {
		t.Errorf("record file %q", got)
	}
}
