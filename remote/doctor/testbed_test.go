package doctor

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/live"
	"github.com/bringup-dev/bringup/remote/sshx"
	"github.com/bringup-dev/bringup/remote/systemd"
	"github.com/bringup-dev/bringup/remote/testkit/tbssh"
	"github.com/bringup-dev/bringup/remote/testkit/testbed"
)

// TestLeastPrivilegeOnTestbed runs every action as a login whose sudoers
// allows only the rule doctor renders (gpu1), and shows that the rule is
// narrow: sudo refuses anything else, and the two commands that read a
// list or an archive from stdin keep them inside their directories. gpu2's
// sudoers holds the advice doctor used to give, NOPASSWD for systemctl:
// doctor flags it with the exact rule, and a mode change fails there.
func TestLeastPrivilegeOnTestbed(t *testing.T) {
	cat := kernels.DefaultCatalog()
	base := live.Options{Host: remote.Host{Unit: testbed.UnitName}, Kernels: cat, NoGPU: true}
	rule, err := sshx.SudoersRule(Scope(base, "deploy", nil))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the rule under test:\n%s", rule)
	tb := testbed.StartWith(t, testbed.Options{Hosts: 2, Host: func(i int) testbed.HostOptions {
		if i == 0 {
			return testbed.HostOptions{KernelMode: "validate", DeploySudoers: rule}
		}
		return testbed.HostOptions{DeploySudoers: "deploy ALL=(root) NOPASSWD: /usr/bin/systemctl\n"}
	}})
	root := func(t *testing.T, host, cmd string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		out, err := tb.Run(ctx, host, cmd)
		if err != nil {
			t.Fatalf("%s as root: %s: %v", host, cmd, err)
		}
		return out
	}
	if out := root(t, "gpu1", "visudo -c -f /etc/sudoers.d/deploy && echo parsed"); !strings.Contains(out, "parsed") {
		t.Fatalf("visudo: %s", out)
	}

	opts := func(t *testing.T, alias string) live.Options {
		t.Helper()
		cfg, err := sshx.Resolve(t.Context(), alias, sshx.ResolveOptions{ConfigFile: tb.SSHConfig()})
		if err != nil {
			t.Fatal(err)
		}
		o := base
		o.Name, o.SSH = alias, cfg
		o.Dial = sshx.DialOptions{Resolve: sshx.ResolveOptions{ConfigFile: tb.SSHConfig()}, AgentSocket: "-"}
		return o
	}

	t.Run("doctor", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		ok := sudoOf(t, Host(ctx, opts(t, "gpu1-deploy")))
		if ok.Status != OK || !strings.Contains(ok.Detail, "may run the 27 root commands") {
			t.Errorf("gpu1 (the rule): %+v", ok)
		}
		old := sudoOf(t, Host(ctx, opts(t, "gpu2-deploy")))
		t.Logf("gpu2 (NOPASSWD for systemctl): %s\n  fix: %s", old.Detail, old.Fix)
		// gpu2 resolves the same tools at the same paths: the same rule.
		if old.Status != Warn || !strings.Contains(old.Detail, "run 5 of the 27") || !strings.Contains(old.Fix, indent(rule)) {
			t.Errorf("gpu2 (the old advice): %+v", old)
		}
	})

	t.Run("old advice is not enough", func(t *testing.T) {
		err := do(t, opts(t, "gpu2-deploy"), remote.Action{Kind: remote.ActSetMode, Kernel: "kdtree-verify", Mode: "on"})
		// sudo -n asks for a password before it says a command is not
		// allowed: the refusal may come as either.
		var serr *systemd.SudoError
		if !errors.As(err, &serr) || !strings.Contains(err.Error(), "prepare /etc/systemd/system/sglang.service.d") {
			t.Fatalf("mode change under NOPASSWD systemctl: %v, want sudo refusing the drop-in write", err)
		}
		t.Logf("gpu2: %v", err)
	})

	t.Run("every action", func(t *testing.T) {
		testEveryAction(t, tb, opts(t, "gpu1-deploy"), root)
	})

	t.Run("narrow", func(t *testing.T) {
		conn := tbssh.Connect(t, tb, "gpu1-deploy")
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		root(t, "gpu1", "echo keep > /var/tmp/victim && chmod 644 /var/tmp/victim")
		for _, cmd := range []string{
			"sudo -n true",
			"sudo -n sh -c id",
			"sudo -n -- rm -f -- /var/tmp/victim",
			"sudo -n -- cat -- /proc/1/environ /etc/shadow",
			"sudo -n -- cat -- /etc/shadow",
			"sudo -n -- systemctl --no-ask-password restart -- ssh.service",
			"sudo -n -- systemctl --no-ask-password daemon-reexec",
			"sudo -n -- mkdir -p -- /etc/evil",
			"sudo -n -- tar -x --no-same-owner -f - -C /etc",
			"sudo -n -- rsync --ignore-times --perms -- /etc/shadow /var/tmp/victim",
			"sudo -n -- install -m 0644 -T -- /dev/stdin /etc/sudoers.d/more",
			"sudo -n -- mv -f -T -- /var/tmp/victim /etc/sudoers.d/more",
		} {
			_, errOut, code, err := conn.Exec(ctx, cmd+" </dev/null")
			if err != nil || code == 0 {
				t.Errorf("%s: exit %d, %v: sudo allowed it", cmd, code, err)
				continue
			}
			if !strings.Contains(string(errOut), "not allowed to execute") && !strings.Contains(string(errOut), "password is required") {
				t.Errorf("%s: refused, but not by sudo? %q", cmd, errOut)
			}
		}
		// The allowed tar reads an archive on stdin: a member that climbs
		// out lands inside the staging directory (GNU tar strips the
		// "../") or is refused.
		dir := cat.Kernels[0].RemoteDir
		if _, errOut, code, err := conn.Exec(ctx, sshx.DeployMkdirCmd(dir, "/var/lib/bringup/deployed").Line(true)); err != nil || code != 0 {
			t.Fatalf("staging dir: %d %v %s", code, err, errOut)
		}
		var arch bytes.Buffer
		tw := tar.NewWriter(&arch)
		_ = tw.WriteHeader(&tar.Header{Name: "files/", Mode: 0o755, Typeflag: tar.TypeDir})
		_ = tw.WriteHeader(&tar.Header{Name: "../../../var/tmp/victim", Mode: 0o644, Size: 4, Typeflag: tar.TypeReg})
		_, _ = tw.Write([]byte("evil"))
		_ = tw.Close()
		_, errOut, code, err := conn.ExecInput(ctx, sshx.DeployUnpackCmd(dir).Line(true), bytes.NewReader(arch.Bytes()))
		t.Logf("tar with a climbing member: exit %d, %v: %s", code, err, errOut)
		// The allowed rsync reads include rules on stdin: patterns only,
		// so a merge of another file (a way to read it as root) is just a
		// pattern, and it works inside its two directories alone.
		before := root(t, "gpu1", "find "+dir+" | sort | sha256sum")
		rules := "/../../../var/tmp/victim\x00. /etc/shadow\x00merge /etc/shadow\x00- *\x00"
		outB, errB, code, err := conn.ExecInput(ctx, sshx.DeployApplyCmd(dir).Line(true), strings.NewReader(rules))
		said := string(outB) + string(errB)
		t.Logf("rsync with climbing and merge rules: exit %d, %v: %s", code, err, said)
		if strings.Contains(said, "root:") {
			t.Errorf("rsync showed /etc/shadow: %s", said)
		}
		if after := root(t, "gpu1", "find "+dir+" | sort | sha256sum"); after != before {
			t.Errorf("rules that exclude everything changed %s", dir)
		}
		if got := root(t, "gpu1", "cat /var/tmp/victim"); got != "keep\n" {
			t.Errorf("/var/tmp/victim is now %q: the allowed commands reached outside their directories", got)
		}
		root(t, "gpu1", sshx.DeployCleanCmd(dir).Line(false))
	})
}

// testEveryAction runs each action through the console's own door
// (live.Host.Do) as gpu1's deploy login: mode (drop-in + daemon-reload),
// restart, stop, reset-failed, undo, a runtime mode and its undo, and a
// redeploy of 2 000 files, then one that changes, deletes and removes.
func testEveryAction(t *testing.T, tb *testbed.Testbed, o live.Options, root func(*testing.T, string, string) string) {
	const unit = testbed.UnitName
	b := localBuild{t: t, dir: t.TempDir() + "/site"}
	b.put("sitecustomize.py", "import os\nif os.environ.get('KDTREE_MODE', 'off') != 'off':\n    import kdtree_verify\n")
	b.put("kdtree_verify/__init__.py", "VERSION = '2000'\n")
	for i := range 2000 {
		b.put(fmt.Sprintf("kdtree_verify/ops%02d/a_module_with_a_long_descriptive_name_%04d.py", i%40, i), fmt.Sprintf("N = %d\n", i))
	}
	o.Kernels.Kernels[0].LocalDir = b.dir
	h := live.New(o)
	ev := newEvents()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); _ = h.Run(ctx, ev.emit) }()
	t.Cleanup(func() { cancel(); <-done })
	ev.waitUp(t)

	act := func(a remote.Action) {
		t.Helper()
		actx, acancel := context.WithTimeout(t.Context(), 3*time.Minute)
		defer acancel()
		start := time.Now()
		if err := h.Do(actx, a, ev.emit); err != nil {
			t.Fatalf("%s as deploy: %v\nlast commands:\n%s", a, err, ev.commands(8))
		}
		t.Logf("%s: %v", a, time.Since(start).Round(time.Millisecond))
	}
	state := func() string {
		t.Helper()
		return strings.TrimSpace(root(t, "gpu1", "systemctl show -p ActiveState -p SubState --value "+unit+" | paste -sd/"))
	}
	path := kernels.DropInPath(unit, "kdtree-verify", false)

	act(remote.Action{Kind: remote.ActSetMode, Kernel: "kdtree-verify", Mode: "on"})
	if got := root(t, "gpu1", "stat -c '%U %a' "+path+"; systemctl show -p Environment --value "+unit); !strings.HasPrefix(got, "root 644\n") || !strings.Contains(got, "KDTREE_MODE=on") {
		t.Fatalf("after mode on: %q", got)
	}
	act(remote.Action{Kind: remote.ActRestart})
	if st := state(); st != "active/running" {
		t.Fatalf("after restart: %s", st)
	}
	act(remote.Action{Kind: remote.ActStop})
	if st := state(); st != "inactive/dead" {
		t.Fatalf("after stop: %s", st)
	}
	act(remote.Action{Kind: remote.ActRestart})
	root(t, "gpu1", "systemctl kill -s KILL "+unit+" && sleep 1")
	if st := state(); st != "failed/failed" {
		t.Fatalf("after kill: %s", st)
	}
	act(remote.Action{Kind: remote.ActResetFailed})
	if st := state(); st != "inactive/dead" {
		t.Fatalf("after reset-failed: %s", st)
	}
	act(remote.Action{Kind: remote.ActUndoMode, Kernel: "kdtree-verify"})
	if got := root(t, "gpu1", "ls -a "+kernels.DropInDir(unit, false)+" 2>&1; systemctl show -p Environment --value "+unit); strings.Contains(got, "bringup") || !strings.Contains(got, "KDTREE_MODE=validate") {
		t.Fatalf("after undo: %q", got)
	}
	act(remote.Action{Kind: remote.ActSetMode, Kernel: "kdtree-verify", Mode: "off", Runtime: true})
	act(remote.Action{Kind: remote.ActUndoMode, Kernel: "kdtree-verify"})

	act(remote.Action{Kind: remote.ActRedeploy, Kernel: "kdtree-verify"})
	dir := o.Kernels.Kernels[0].RemoteDir
	// The `@` log holds the steps fed on stdin too: the tar stream into
	// the staging directory and rsync's rules, with what they were fed.
	var unpack, apply string
	for _, c := range ev.all() {
		switch {
		case strings.Contains(c, " tar ") && strings.Contains(c, " < stdin ("):
			unpack = c
		case strings.Contains(c, " rsync ") && strings.Contains(c, " < stdin ("):
			apply = c
		}
	}
	if !strings.Contains(unpack, "MiB)") || !strings.Contains(unpack, "→ exit 0") || apply == "" {
		t.Errorf("the redeploy's stdin steps in the command log: tar %q, rsync %q; last commands:\n%s", unpack, apply, ev.commands(12))
	}
	t.Logf("redeploy's stdin steps:\n  %s\n  %s", unpack, apply)
	// 2 000 files and the build's two; the image's kdtree_verify.py,
	// which the build lacks, is gone.
	if got := root(t, "gpu1", "find "+dir+" -type f | wc -l; stat -c '%U %a' "+dir+"/kdtree_verify/ops07/*_0007.py; ls -A "+strings.TrimSuffix(dir, "/site")); got != "2002\nroot 644\nsite\n" {
		t.Fatalf("after the 2 000-file redeploy: %q", got)
	}
	b.remove("kdtree_verify/ops13")
	b.put("kdtree_verify/__init__.py", "VERSION = '2001'\n")
	b.chmod("sitecustomize.py", 0o755)
	act(remote.Action{Kind: remote.ActRedeploy, Kernel: "kdtree-verify"})
	if got := root(t, "gpu1", "find "+dir+" -type f | wc -l; ls "+dir+"/kdtree_verify/ops13 2>&1 | head -1; stat -c %a "+dir+"/sitecustomize.py; cat "+dir+"/kdtree_verify/__init__.py"); got != "1952\nls: cannot access '"+dir+"/kdtree_verify/ops13': No such file or directory\n755\nVERSION = '2001'\n" {
		t.Fatalf("after the second redeploy: %q", got)
	}
	act(remote.Action{Kind: remote.ActSetMode, Kernel: "kdtree-verify", Mode: "on"})
	act(remote.Action{Kind: remote.ActRestart})
	if st := state(); st != "active/running" {
		t.Fatalf("after mode on and restart with the new build: %s", st)
	}
	for _, c := range ev.all() {
		if strings.Contains(c, "sh -c") {
			t.Errorf("an action ran a shell as root: %s", c)
		}
	}
}

// do runs one action on a fresh live host.
func do(t *testing.T, o live.Options, a remote.Action) error {
	h := live.New(o)
	ev := newEvents()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); _ = h.Run(ctx, ev.emit) }()
	defer func() { cancel(); <-done }()
	ev.waitUp(t)
	actx, acancel := context.WithTimeout(t.Context(), time.Minute)
	defer acancel()
	return h.Do(actx, a, ev.emit)
}

func sudoOf(t *testing.T, rep *Report) Check {
	t.Helper()
	for _, c := range rep.Checks {
		if c.Name == "sudo" {
			return c
		}
	}
	t.Fatalf("no sudo check in %+v", rep.Checks)
	return Check{}
}
