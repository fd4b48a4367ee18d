package live

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/sshx"
)

// TestResolveAllKeepsOrderAndFirstError resolves more targets than there
// are workers through a real ssh_config: each gets its own answer, in
// the order given, and of two bad names the first is the one reported.
func TestResolveAllKeepsOrderAndFirstError(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "ssh_config")
	var b strings.Builder
	const n = 3*resolveWorkers + 1
	for i := range n {
		fmt.Fprintf(&b, "Host h%d\n  HostName 10.0.0.%d\n  Port %d\n  User u%d\n", i, i+1, 2200+i, i)
	}
	if err := os.WriteFile(cfg, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	targets := make([]Target, n)
	for i := range targets {
		targets[i] = Target{Host: remote.Host{Name: fmt.Sprintf("h%d", i)}, SSH: SSHTarget{Host: fmt.Sprintf("h%d", i)}}
	}
	configs, _, err := resolveAll(context.Background(), targets, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range configs {
		if want := fmt.Sprintf("10.0.0.%d", i+1); c.HostName != want || c.Port != 2200+i || c.User != fmt.Sprintf("u%d", i) {
			t.Errorf("target %d: %s@%s:%d, want u%d@%s:%d", i, c.User, c.HostName, c.Port, i, want, 2200+i)
		}
	}

	targets[5].Name, targets[5].SSH.Host = "bad5", "-bad5"
	targets[n-1].Name, targets[n-1].SSH.Host = "badlast", "-badlast"
	_, _, err = resolveAll(context.Background(), targets, cfg)
	if err == nil || !strings.HasPrefix(err.Error(), "bad5: ") {
		t.Fatalf("error %v, want the first bad target's (bad5)", err)
	}
}

// fleetSSHConfig writes an ssh_config shaped as the testbed's inventory
// writes it for n hosts (a Host block per host and its deploy alias, one
// shared block listing every alias) and returns its path and the targets.
func fleetSSHConfig(tb testing.TB, n int) (string, []Target) {
	tb.Helper()
	dir := tb.TempDir()
	var b strings.Builder
	var aliases []string
	targets := make([]Target, n)
	for i := range n {
		name := fmt.Sprintf("gpu%d", i)
		addr := fmt.Sprintf("10.%d.%d.2", i/250, i%250)
		fmt.Fprintf(&b, "\nHost %s\n  HostName %s\n  User root\n", name, addr)
		fmt.Fprintf(&b, "\nHost %s-deploy\n  HostName %s\n  User deploy\n", name, addr)
		aliases = append(aliases, name, name+"-deploy")
		targets[i] = Target{Host: remote.Host{Name: name}, SSH: SSHTarget{Host: name}}
	}
	fmt.Fprintf(&b, "\nHost %s\n", strings.Join(aliases, " "))
	fmt.Fprintf(&b, "  Port 22\n  IdentityFile \"%s/key\"\n  IdentitiesOnly yes\n", dir)
	fmt.Fprintf(&b, "  UserKnownHostsFile \"%s/known_hosts\"\n  GlobalKnownHostsFile /dev/null\n  StrictHostKeyChecking yes\n", dir)
	b.WriteString("  BatchMode yes\n  ConnectTimeout 10\n  ServerAliveInterval 15\n")
	cfg := filepath.Join(dir, "ssh_config")
	if err := os.WriteFile(cfg, []byte(b.String()), 0o600); err != nil {
		tb.Fatal(err)
	}
	return cfg, targets
}

// resolveEachSSHG is how a fleet resolved before the Resolver: one
// `ssh -G` per host, resolveWorkers at once.
func resolveEachSSHG(ctx context.Context, targets []Target, sshConfig string) ([]sshx.Config, error) {
	configs := make([]sshx.Config, len(targets))
	errs := make([]error, len(targets))
	next := make(chan int)
	var wg sync.WaitGroup
	for range resolveWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				configs[i], errs[i] = sshx.Resolve(ctx, targets[i].SSH.Host, sshx.ResolveOptions{ConfigFile: sshConfig})
			}
		}()
	}
	for i := range targets {
		next <- i
	}
	close(next)
	wg.Wait()
	return configs, errors.Join(errs...)
}

// BenchmarkResolve256 resolves a 256-host fleet's ssh_config side by side:
// the Resolver (one reading, its parser per host) and one `ssh -G` process
// per host (8 at once, as resolveAll ran them). It first checks that both
// give the same Configs. `go test ./remote/live -run '^$' -bench Resolve256`.
func BenchmarkResolve256(b *testing.B) {
	if _, err := exec.LookPath("ssh"); err != nil {
		b.Skip("no ssh binary to compare with")
	}
	ctx := context.Background()
	cfg, targets := fleetSSHConfig(b, 256)
	fast, _, err := resolveAll(ctx, targets, cfg)
	if err != nil {
		b.Fatal(err)
	}
	slow, err := resolveEachSSHG(ctx, targets, cfg)
	if err != nil {
		b.Fatal(err)
	}
	for i := range fast {
		if fast[i].Source != sshx.SourceParser {
			b.Fatalf("%s: resolved by %s, want the parser", targets[i].Name, fast[i].Source)
		}
		f, s := fast[i], slow[i]
		f.Source, s.Source = "", ""
		if !reflect.DeepEqual(f, s) {
			b.Fatalf("%s:\nparser %+v\nssh -G %+v", targets[i].Name, f, s)
		}
	}
	b.Run("parser", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := resolveAll(ctx, targets, cfg); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ssh-G", func(b *testing.B) {
		for b.Loop() {
			if _, err := resolveEachSSHG(ctx, targets, cfg); err != nil {
				b.Fatal(err)
			}
		}
	})
}
