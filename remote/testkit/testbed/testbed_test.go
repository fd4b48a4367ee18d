package testbed

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/remote/testkit/e2e"
)

// startupWait bounds a startup of sglang.service with the testbed's phase
// lengths (about 10 s) on a busy 2-core machine.
const startupWait = 90 * time.Second

// TestTestbed boots three hosts once and checks, in order, everything the
// later end-to-end tests rely on, then that Down leaves nothing behind.
func TestTestbed(t *testing.T) {
	start := time.Now()
	tb := StartWith(t, Options{Hosts: 3, Host: func(i int) HostOptions {
		if i == 1 {
			return HostOptions{KernelMode: "validate"}
		}
		return HostOptions{}
	}})
	t.Logf("3 hosts up in %s (includes the image build if it was not cached)", time.Since(start).Round(10*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	t.Run("openssh with strict host keys", func(t *testing.T) {
		for _, h := range tb.Hosts() {
			out, err := exec.CommandContext(ctx, "ssh", "-F", tb.SSHConfig(), "-o", "StrictHostKeyChecking=yes",
				h.Name, "systemctl is-system-running; hostname; command -v nvidia-smi").CombinedOutput()
			if err != nil {
				t.Fatalf("ssh %s: %v: %s", h.Name, err, out)
			}
			want := "running\n" + h.Name + "\n/usr/local/bin/nvidia-smi\n"
			if string(out) != want {
				t.Errorf("ssh %s: got %q, want %q", h.Name, out, want)
			}
		}
	})

	t.Run("host keys differ", func(t *testing.T) {
		seen := map[string]string{}
		for _, h := range tb.Hosts() {
			key, err := tb.Run(ctx, h.Name, "cat /etc/ssh/ssh_host_ed25519_key.pub")
			if err != nil {
				t.Fatal(err)
			}
			if other, ok := seen[key]; ok {
				t.Errorf("%s and %s share a host key", h.Name, other)
			}
			seen[key] = h.Name
		}
	})

	t.Run("deploy sudo", func(t *testing.T) {
		cases := []struct {
			host   string
			sudoOK bool
		}{{"gpu1", true}, {"gpu2", false}}
		for _, c := range cases {
			out, err := exec.CommandContext(ctx, "ssh", "-F", tb.SSHConfig(), c.host+"-deploy", "id -un; sudo -n true").CombinedOutput()
			if !strings.HasPrefix(string(out), "deploy\n") {
				t.Errorf("%s-deploy: not logged in as deploy: %q", c.host, out)
			}
			if (err == nil) != c.sudoOK {
				t.Errorf("%s-deploy: sudo -n true: err=%v, want success=%v (%s)", c.host, err, c.sudoOK, out)
			}
		}
	})

	t.Run("sglang serves", func(t *testing.T) {
		h, err := tb.Host("gpu1")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tb.Run(ctx, h.Name, "systemctl start "+UnitName); err != nil {
			t.Fatal(err)
		}
		url := fmt.Sprintf("http://%s:%d%s", h.Addr, ServicePort, HealthPath)
		waitFor(t, startupWait, "GET "+url+" = 200", func() bool {
			c := http.Client{Timeout: 2 * time.Second}
			resp, err := c.Get(url)
			if err != nil {
				return false
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK
		})
		out, err := tb.Run(ctx, h.Name, "journalctl -u "+UnitName+" -o json --no-pager")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out, "The server is fired up and ready to roll!") {
			t.Errorf("journal of %s on %s lacks the ready line:\n%s", UnitName, h.Name, out)
		}
		env, err := tb.Run(ctx, h.Name, "systemctl show -p Environment "+UnitName)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"KDTREE_MODE=off", "PYTHONPATH=" + KernelPythonPath} {
			if !strings.Contains(env, want) {
				t.Errorf("unit environment lacks %s: %s", want, env)
			}
		}
	})

	t.Run("validate mode fails capture", func(t *testing.T) {
		if _, err := tb.Run(ctx, "gpu2", "systemctl start "+UnitName); err != nil {
			t.Fatal(err)
		}
		waitFor(t, startupWait, UnitName+" failed on gpu2", func() bool {
			out, _ := tb.Run(ctx, "gpu2", "systemctl is-failed "+UnitName)
			return strings.TrimSpace(out) == "failed"
		})
		out, err := tb.Run(ctx, "gpu2", "journalctl -u "+UnitName+" -o cat --no-pager")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out, "operation not permitted when stream is capturing") {
			t.Errorf("journal on gpu2 lacks the capture failure:\n%s", out)
		}
	})

	t.Run("down leaves nothing", func(t *testing.T) {
		if err := tb.Down(ctx); err != nil {
			t.Fatal(err)
		}
		left, err := tb.Leftovers()
		if err != nil {
			t.Fatal(err)
		}
		if len(left) > 0 {
			t.Errorf("after down: %s", strings.Join(left, "; "))
		}
		all, err := Leftovers()
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range all {
			if strings.Contains(l, tb.RunID()) {
				t.Errorf("after down, still there: %s", l)
			}
		}
		if _, err := os.Stat(recordPath(DefaultRunDir, tb.RunID())); !os.IsNotExist(err) {
			t.Errorf("run record still there (err %v)", err)
		}
	})
}

// TestDownRemovesDefaultInventory is `testbed up` then `testbed down
// --inventory` on a real host: the inventory Up made under the run
// directory (a copy of infersim, the consoles) is gone after down, not
// only its state file.
func TestDownRemovesDefaultInventory(t *testing.T) {
	e2e.Require(t, e2e.Root())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	up, err := Up(ctx, Options{Hosts: 1, Detach: true, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	inv := up.Inventory()
	t.Cleanup(func() { _ = up.Down(context.Background()) }) // if the test fails half-way
	if filepath.Dir(inv) != DefaultRunDir {
		t.Fatalf("inventory %s, want it under %s", inv, DefaultRunDir)
	}
	if _, err := os.Stat(filepath.Join(inv, "bin", "infersim")); err != nil {
		t.Fatalf("the inventory holds no infersim: the test proves nothing: %v", err)
	}
	tb, err := Open(inv) // as a later `testbed down --inventory` does
	if err != nil {
		t.Fatal(err)
	}
	if err := tb.Down(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(inv); !os.IsNotExist(err) {
		ents, _ := os.ReadDir(inv)
		t.Errorf("inventory %s still there after down (%d entries, err %v)", inv, len(ents), err)
	}
	if left, err := tb.Leftovers(); err != nil || len(left) > 0 {
		t.Errorf("after down: %v %v", left, err)
	}
}

// TestUpSweepsKilledRun kills a process in the middle of a run, as a
// killed test would be, and checks that the next Up removes what it left.
func TestUpSweepsKilledRun(t *testing.T) {
	if os.Getenv("BRINGUP_TESTBED_HELPER") == "1" {
		helperRun()
		return
	}
	e2e.Require(t, e2e.Root())
	inv := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestUpSweepsKilledRun$", "-test.v")
	cmd.Env = append(os.Environ(), "BRINGUP_TESTBED_HELPER=1", "BRINGUP_TESTBED_HELPER_INV="+inv)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := false
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "HELPER READY") {
			ready = true
			break
		}
		t.Log("helper:", sc.Text())
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	if !ready {
		t.Fatal("helper did not bring its testbed up")
	}
	dead, err := Open(inv)
	if err != nil {
		t.Fatal(err)
	}
	left, err := dead.Leftovers()
	if err != nil {
		t.Fatal(err)
	}
	if len(left) == 0 {
		t.Fatal("the killed run left nothing: the test proves nothing")
	}
	t.Logf("killed run %s left: %s", dead.RunID(), strings.Join(left, "; "))

	StartWith(t, Options{Hosts: 1}) // its Up sweeps
	left, err = dead.Leftovers()
	if err != nil {
		t.Fatal(err)
	}
	if len(left) > 0 {
		t.Errorf("after the next up, the killed run still has: %s", strings.Join(left, "; "))
	}
}

// helperRun is the process TestUpSweepsKilledRun kills: it brings up one
// host, says so, and waits to be killed.
func helperRun() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	tb, err := Up(ctx, Options{Hosts: 1, InventoryDir: os.Getenv("BRINGUP_TESTBED_HELPER_INV")})
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(1)
	}
	fmt.Println("HELPER READY", tb.RunID())
	<-ctx.Done()
	os.Exit(1)
}

// waitFor polls cond until it holds or d passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// BenchmarkUp measures Up and Down of three hosts with a cached image.
func BenchmarkUp(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root")
	}
	ctx := context.Background()
	for b.Loop() {
		tb, err := Up(ctx, Options{Hosts: 3, InventoryDir: filepath.Join(b.TempDir(), "inv")})
		if err != nil {
			b.Fatal(err)
		}
		if err := tb.Down(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
