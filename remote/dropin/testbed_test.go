package dropin_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote/dropin"
	"github.com/bringup-dev/bringup/remote/sshx"
	"github.com/bringup-dev/bringup/remote/systemd"
	"github.com/bringup-dev/bringup/remote/testkit/tbssh"
	"github.com/bringup-dev/bringup/remote/testkit/testbed"
)

const unit = testbed.UnitName

// connect returns a managed connection to an ssh_config alias of tb,
// stopped when t ends.
func connect(t *testing.T, tb *testbed.Testbed, alias string) *sshx.Conn {
	t.Helper()
	return tbssh.Connect(t, tb, alias)
}

// clientDialer is one raw SSH client as a Runner and systemd.Dialer, so
// that a test can cut exactly the connection a change runs over.
type clientDialer struct{ c *ssh.Client }

func (d clientDialer) Exec(ctx context.Context, cmd string) ([]byte, []byte, int, error) {
	s, err := d.c.NewSession()
	if err != nil {
		return nil, nil, -1, fmt.Errorf("new session: %w", err)
	}
	defer s.Close()
	var o, e bytes.Buffer
	s.Stdout, s.Stderr = &o, &e
	stop := context.AfterFunc(ctx, func() { s.Close() })
	defer stop()
	err = s.Run(cmd)
	var ee *ssh.ExitError
	switch {
	case err == nil:
		return o.Bytes(), e.Bytes(), 0, nil
	case errors.As(err, &ee):
		return o.Bytes(), e.Bytes(), ee.ExitStatus(), nil
	}
	return o.Bytes(), e.Bytes(), -1, fmt.Errorf("exec %q: %w", cmd, err)
}

func (d clientDialer) DialUnix(ctx context.Context, path string) (net.Conn, error) {
	return d.c.DialContext(ctx, "unix", path)
}

func (d clientDialer) Client(context.Context) (*ssh.Client, error) { return d.c, nil }

// run runs cmd on host as root and fails t on error.
func run(t *testing.T, tb *testbed.Testbed, host, cmd string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := tb.Run(ctx, host, cmd)
	if err != nil {
		t.Fatalf("%s: %v", cmd, err)
	}
	return out
}

// fileState is the drop-in as the test sees it over r: its content, or
// absent.
func fileState(t *testing.T, r dropin.Runner, path string) (content []byte, exists bool) {
	t.Helper()
	out := exec(t, r, "if [ -e "+path+" ]; then printf 1; cat "+path+"; else printf 0; fi")
	return []byte(out[1:]), out[0] == '1'
}

// exec runs cmd over r and fails t unless it succeeds.
func exec(t *testing.T, r dropin.Runner, cmd string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, errOut, code, err := r.Exec(ctx, cmd)
	if err != nil || code != 0 {
		t.Fatalf("%s: exit %d, %v: %s", cmd, code, err, errOut)
	}
	return string(out)
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// TestOnTestbed runs every end-to-end check on one testbed of two hosts:
// gpu1 in validate with CUDA graphs on (the seed's failure), gpu2 in
// validate with --disable-cuda-graph.
func TestOnTestbed(t *testing.T) {
	tb := testbed.StartWith(t, testbed.Options{Hosts: 2, Host: func(i int) testbed.HostOptions {
		if i == 1 {
			return testbed.HostOptions{KernelMode: "validate", Args: []string{"--disable-cuda-graph"}}
		}
		return testbed.HostOptions{KernelMode: "validate"}
	}})
	k := kernels.DefaultCatalog().Kernels[0]
	conns := map[string]*sshx.Conn{"gpu1": connect(t, tb, "gpu1"), "gpu2": connect(t, tb, "gpu2")}
	ctls := map[string]*systemd.Controller{"gpu1": systemd.NewController(conns["gpu1"], "gpu1"), "gpu2": systemd.NewController(conns["gpu2"], "gpu2")}

	t.Run("preflight", func(t *testing.T) {
		for _, tt := range []struct {
			host string
			ok   bool
		}{{"gpu1", false}, {"gpu2", true}} {
			exec, err := dropin.ReadExecStart(ctxT(t, 30*time.Second), conns[tt.host], unit)
			if err != nil {
				t.Fatal(err)
			}
			res := kernels.Preflight(k, "validate", exec, kernels.EngineAuto)
			t.Logf("%s: ExecStart %s\n  → %+v", tt.host, exec, res)
			if res.OK != tt.ok || res.Engine != kernels.EngineSGLang {
				t.Errorf("%s: preflight of validate = %+v, want OK %v", tt.host, res, tt.ok)
			}
			if !tt.ok && !strings.Contains(res.Reason, "will fail at graph capture") {
				t.Errorf("%s: reason %q does not explain", tt.host, res.Reason)
			}
			if on := kernels.Preflight(k, "on", exec, ""); !on.OK {
				t.Errorf("%s: preflight of on refused: %s", tt.host, on.Reason)
			}
		}
	})

	t.Run("set-start-undo", func(t *testing.T) { testSetStartUndo(t, tb, conns["gpu1"], ctls["gpu1"], k) })

	t.Run("runtime", func(t *testing.T) {
		ctx := ctxT(t, time.Minute)
		start := time.Now()
		var times []string
		last := start
		hook := func(s dropin.Step) {
			times = append(times, fmt.Sprintf("%s +%v", s, time.Since(last).Round(time.Millisecond)))
			last = time.Now()
		}
		c, err := dropin.SetMode(ctx, conns["gpu2"], ctls["gpu2"], unit, k, "on", dropin.SetOptions{Runtime: true, StepHook: hook})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("SetMode took %v (each step: time since the previous one began): %s, verify %v",
			time.Since(start).Round(time.Millisecond), strings.Join(times, ", "), time.Since(last).Round(time.Millisecond))
		if want := "/run/systemd/system/sglang.service.d/60-bringup-kdtree-verify.conf"; c.Path != want {
			t.Fatalf("runtime path %q, want %q", c.Path, want)
		}
		if got, ok := fileState(t, conns["gpu2"], c.Path); !ok || !bytes.Equal(got, c.New) {
			t.Fatalf("runtime drop-in on disk = %q (exists %v), want %q", got, ok, c.New)
		}
		if _, ok := fileState(t, conns["gpu2"], kernels.DropInPath(unit, k.Name, false)); ok {
			t.Fatal("a runtime change wrote under /etc")
		}
		if v, _ := kernels.EnvValue(c.EnvAfter, "KDTREE_MODE"); v != "on" {
			t.Fatalf("environment after runtime change: %q", c.EnvAfter)
		}
		if err := dropin.Undo(ctx, conns["gpu2"], ctls["gpu2"], c, k, dropin.SetOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, ok := fileState(t, conns["gpu2"], c.Path); ok {
			t.Fatal("undo left the runtime drop-in")
		}
	})

	t.Run("sudo", func(t *testing.T) {
		ctx := ctxT(t, time.Minute)
		// gpu1's deploy user has NOPASSWD sudo, gpu2's has none.
		d1 := connect(t, tb, "gpu1-deploy")
		c, err := dropin.SetMode(ctx, d1, systemd.NewController(d1, "gpu1"), unit, k, "on", dropin.SetOptions{})
		if err != nil {
			t.Fatalf("deploy with sudo: %v", err)
		}
		if err := dropin.Undo(ctx, d1, systemd.NewController(d1, "gpu1"), c, k, dropin.SetOptions{}); err != nil {
			t.Fatalf("deploy with sudo, undo: %v", err)
		}
		d2 := connect(t, tb, "gpu2-deploy")
		_, err = dropin.SetMode(ctx, d2, systemd.NewController(d2, "gpu2"), unit, k, "on", dropin.SetOptions{})
		var serr *systemd.SudoError
		if !errors.As(err, &serr) {
			t.Fatalf("deploy without sudo: err = %v, want a SudoError", err)
		}
		t.Logf("deploy without sudo: %v", err)
	})

	t.Run("round-trip", func(t *testing.T) { testRoundTrip(t, tb, conns["gpu2"], ctls["gpu2"]) })

	t.Run("crash-safety", func(t *testing.T) { testCrashSafety(t, tb, k) })
}

// testSetStartUndo: on a host in validate, set on, start the service and
// see it run in on; set off and see a restart pending; undo twice, back
// to the unit's own validate with no drop-in.
func testSetStartUndo(t *testing.T, tb *testbed.Testbed, conn *sshx.Conn, ctl *systemd.Controller, k kernels.Kernel) {
	ctx := ctxT(t, 2*time.Minute)
	path := kernels.DropInPath(unit, k.Name, false)
	if _, ok := fileState(t, conn, path); ok {
		t.Fatalf("%s exists before the test", path)
	}
	c, err := dropin.SetMode(ctx, conn, ctl, unit, k, "on", dropin.SetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Previous.Exists || c.Path != path {
		t.Fatalf("change %+v: want a new file at %s", c, path)
	}
	if got, ok := fileState(t, conn, path); !ok || !bytes.Equal(got, c.New) {
		t.Fatalf("drop-in on disk = %q, want %q", got, c.New)
	}
	show := run(t, tb, "gpu1", "systemctl show -p Environment "+unit)
	for _, want := range []string{" KDTREE_MODE=on", " PYTHONPATH=/opt/kdtree/site"} {
		if !strings.Contains(show, want) {
			t.Errorf("systemctl show: %q lacks %q", show, want)
		}
	}
	t.Logf("drop-in:\n%s", c.New)

	run(t, tb, "gpu1", "systemctl start "+unit)
	defer run(t, tb, "gpu1", "systemctl stop "+unit)
	var logged bool
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline) && !logged; time.Sleep(200 * time.Millisecond) {
		logged = strings.Contains(run(t, tb, "gpu1", "journalctl -u "+unit+" -o cat --no-pager"), "kdtree-verify: sitecustomize loaded from /opt/kdtree/site, mode=on")
	}
	if !logged {
		t.Fatal("infersim never logged mode=on")
	}
	pid, err := strconv.Atoi(strings.TrimSpace(run(t, tb, "gpu1", "systemctl show -p MainPID --value "+unit)))
	if err != nil || pid == 0 {
		t.Fatalf("MainPID: %v (%d)", err, pid)
	}
	running, err := dropin.RunningModes(ctx, conn, pid, kernels.DefaultCatalog(), dropin.SetOptions{})
	if err != nil || len(running) != 1 || running[0].Mode != "on" {
		t.Fatalf("RunningModes = %+v, %v", running, err)
	}

	off, err := dropin.SetMode(ctx, conn, ctl, unit, k, "off", dropin.SetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	procEnv, err := dropin.ProcessEnv(ctx, conn, pid, dropin.SetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st := kernels.DefaultCatalog().CompareModes(off.EnvAfter, procEnv)
	if len(st) != 1 || st[0].OnDisk.Mode != "off" || st[0].Running.Mode != "on" || !st[0].RestartPending {
		t.Fatalf("host view after setting off under a running on: %+v", st)
	}
	if v, _ := kernels.EnvValue(off.EnvAfter, "PYTHONPATH"); v != testbed.KernelPythonPath {
		t.Errorf("off changed PYTHONPATH to %q", v)
	}

	if err := dropin.Undo(ctx, conn, ctl, off, k, dropin.SetOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, ok := fileState(t, conn, path); !ok || !bytes.Equal(got, c.New) {
		t.Fatalf("after undo of off the drop-in is %q, want the on file byte for byte %q", got, c.New)
	}
	if err := dropin.Undo(ctx, conn, ctl, c, k, dropin.SetOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, ok := fileState(t, conn, path); ok {
		t.Fatal("undo of the first change left a drop-in")
	}
	env, err := ctl.ReadEnvironment(ctx, unit)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := kernels.EnvValue(env, "KDTREE_MODE"); v != "validate" {
		t.Fatalf("after both undos KDTREE_MODE=%q, want the unit's validate", v)
	}
	if err := dropin.Undo(ctx, conn, ctl, c, k, dropin.SetOptions{}); !errors.Is(err, dropin.ErrChanged) {
		t.Fatalf("second undo: err = %v, want ErrChanged", err)
	}
}

// randomValue builds a value from the pieces that break naive quoting.
func randomValue(r *rand.Rand) string {
	pieces := []string{" ", `"`, "'", "$", "${X}", "$$", "%", "%%", "%n", `\`, `\n`, `\x41`, "é", "✓", "日本", "🙂", "\t", "=", ";", "#", "`", "a", "Z", "0", "\x1b", "\x7f", "--", "/", ":"}
	var b strings.Builder
	for range r.IntN(12) {
		b.WriteString(pieces[r.IntN(len(pieces))])
	}
	return b.String()
}

// testRoundTrip writes random environments with the renderer, reloads,
// and reads them back over D-Bus (what systemctl show prints).
func testRoundTrip(t *testing.T, tb *testbed.Testbed, conn *sshx.Conn, ctl *systemd.Controller) {
	rounds := 20
	if s := os.Getenv("BRINGUP_ROUNDTRIP_ROUNDS"); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n > 0 {
			rounds = n
		}
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d, %d rounds", seed, rounds)
	r := rand.New(rand.NewPCG(seed, 1))
	path := "/run/systemd/system/" + unit + ".d/99-bringup-roundtrip.conf"
	ctx := ctxT(t, 5*time.Minute)
	defer run(t, tb, "gpu2", "rm -f "+path+" && systemctl daemon-reload")
	values := 0
	for round := range rounds {
		var env []string
		for i := range 1 + r.IntN(25) {
			env = append(env, fmt.Sprintf("RT_%d_%d=%s", round, i, randomValue(r)))
		}
		content, err := kernels.RenderEnv("round-trip test", env)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := dropin.WriteFile(ctx, conn, path, content, dropin.SetOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := ctl.DaemonReload(ctx); err != nil {
			t.Fatal(err)
		}
		got, err := ctl.ReadEnvironment(ctx, unit)
		if err != nil {
			t.Fatal(err)
		}
		for _, kv := range env {
			key, want, _ := strings.Cut(kv, "=")
			if v, ok := kernels.EnvValue(got, key); !ok || v != want {
				t.Fatalf("round %d: %s read back as %q (set %v), want %q\nfile:\n%s", round, key, v, ok, want, content)
			}
			values++
		}
	}
	t.Logf("%d random values round-tripped through systemd", values)
}

// testCrashSafety cuts the connection a change runs over at each step, 20
// times per step, at random points inside the step: the drop-in is always
// the old or the new file, and the next clean run leaves no temp file.
func testCrashSafety(t *testing.T, tb *testbed.Testbed, k kernels.Kernel) {
	stable := connect(t, tb, "gpu1")
	sctl := systemd.NewController(stable, "gpu1")
	path := kernels.DropInPath(unit, k.Name, false)
	dir := kernels.DropInDir(unit, false)
	steps := []dropin.Step{dropin.StepPrepare, dropin.StepTemp, dropin.StepSyncTemp, dropin.StepRename, dropin.StepSyncDir, dropin.StepReload, dropin.StepVerify}
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 2))
	modes := []string{"on", "validate"}
	var outcomes = map[string]int{}
	for _, step := range steps {
		for trial := range 20 {
			ctx := ctxT(t, time.Minute)
			mode := modes[trial%2]
			before, err := sctl.ReadEnvironment(ctx, unit)
			if err != nil {
				t.Fatal(err)
			}
			newContent, err := kernels.RenderDropIn(k, mode, before)
			if err != nil {
				t.Fatal(err)
			}
			old, oldExists := fileState(t, stable, path)
			cl, err := tb.Client(ctx, "gpu1", "root")
			if err != nil {
				t.Fatal(err)
			}
			d := clientDialer{cl}
			var wg sync.WaitGroup
			hook := func(s dropin.Step) {
				if s != step {
					return
				}
				delay := time.Duration(r.IntN(4000)) * time.Microsecond
				if r.IntN(3) == 0 {
					cl.Close() // cut before the step starts
					return
				}
				wg.Go(func() { time.Sleep(delay); cl.Close() }) // cut inside it
			}
			_, err = dropin.SetMode(ctx, d, systemd.NewController(d, "gpu1"), unit, k, mode, dropin.SetOptions{StepHook: hook})
			wg.Wait()
			cl.Close()
			time.Sleep(50 * time.Millisecond) // let a command sshd left running finish
			got, exists := fileState(t, stable, path)
			switch {
			case exists && bytes.Equal(got, newContent):
				outcomes["new"]++
			case exists == oldExists && bytes.Equal(got, old):
				outcomes["old"]++
			default:
				sum := sha256.Sum256(got)
				t.Fatalf("cut at %s, trial %d (SetMode err %v): drop-in is neither old nor new: exists %v, sha256 %s\n%q", step, trial, err, exists, hex.EncodeToString(sum[:]), got)
			}
			if err == nil {
				outcomes["completed"]++
			}
			if strings.Contains(exec(t, stable, "ls -a "+dir), ".bringup-") {
				outcomes["temp left"]++
			}
		}
	}
	t.Logf("140 cut changes: %v", outcomes)
	ctx := ctxT(t, time.Minute)
	c, err := dropin.SetMode(ctx, stable, sctl, unit, k, "on", dropin.SetOptions{})
	if err != nil {
		t.Fatalf("clean run after the cuts: %v", err)
	}
	if ls := exec(t, stable, "ls -a "+dir); strings.Contains(ls, ".bringup-") || strings.Contains(ls, ".tmp") {
		t.Fatalf("temp files left after a clean run:\n%s", ls)
	}
	run(t, tb, "gpu1", "rm -f "+c.Path+" && systemctl daemon-reload")
}
