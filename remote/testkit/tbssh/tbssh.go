// Package tbssh connects tests to test hosts: a managed SSH connection
// (remote/sshx) to an ssh_config alias of a testbed, the way bringup itself
// connects. It lives apart from testbed so that sshx's own tests, which
// testbed cannot import, are not caught in a cycle.
package tbssh

import (
	"context"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/remote/sshx"
	"github.com/bringup-dev/bringup/remote/testkit/testbed"
)

// Connect returns a connected sshx.Conn to alias (gpu1, gpu2-deploy, …) of
// tb, resolved through tb's ssh_config with strict host keys. It is closed
// when t ends.
func Connect(t testing.TB, tb *testbed.Testbed, alias string) *sshx.Conn {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cfg, err := sshx.Resolve(ctx, alias, sshx.ResolveOptions{ConfigFile: tb.SSHConfig()})
	if err != nil {
		cancel()
		t.Fatalf("resolve %s: %v", alias, err)
	}
	conn := sshx.NewConn(cfg, sshx.ConnOptions{})
	done := make(chan struct{})
	go func() { defer close(done); _ = conn.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	if _, err := conn.Client(wctx); err != nil {
		t.Fatalf("connect %s: %v", alias, err)
	}
	return conn
}
