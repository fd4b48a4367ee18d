package deploy

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/pkg/sftp"
	"golang.org/x/crypto/ssh"
)

// localConn is a Conn whose "host" is this machine: commands run under
// sh, SFTP is pkg/sftp's server in process over pipes. It lets the Sync
// logic run against real files in a temporary directory without SSH.
type localConn struct {
	t    *testing.T
	home string
	// sudo emulates the host's sudo (sudoAs): "nopasswd" runs the
	// command, anything else fails it as a sudo that wants a password does.
	sudo string
	uid  string // what id -u prints; "0" unless set

	mu      sync.Mutex
	clients []*sftp.Client
	wg      sync.WaitGroup
}

func newLocalConn(t *testing.T) *localConn {
	c := &localConn{t: t, home: t.TempDir(), uid: "0", sudo: "nopasswd"}
	t.Cleanup(func() {
		c.kill()
		c.wg.Wait()
	})
	return c
}

func (c *localConn) Host() string { return "local" }

func (c *localConn) Exec(ctx context.Context, cmd string) ([]byte, []byte, int, error) {
	return c.ExecInput(ctx, cmd, nil)
}

// sudoAs is a shell function standing in for the host's sudo: with
// NOPASSWD it runs the command (or, with -l, allows it), otherwise it
// refuses as sudo -n does when it wants a password.
func sudoAs(nopasswd bool) string {
	if !nopasswd {
		return "sudo() { echo 'sudo: a password is required' >&2; return 1; }\n"
	}
	return `sudo() {
  [ "$1" = -n ] && shift
  if [ "$1" = -l ]; then shift; [ "$1" = -- ] && shift; command -v "$1"; return; fi
  [ "$1" = -- ] && shift
  "$@"
}
`
}

// ExecInput runs cmd under sh with stdin, as the host's sshd would.
func (c *localConn) ExecInput(ctx context.Context, cmd string, stdin io.Reader) ([]byte, []byte, int, error) {
	if cmd == "id -u; id -un" {
		return []byte(c.uid + "\ntester\n"), nil, 0, nil
	}
	var out, errOut strings.Builder
	x := exec.CommandContext(ctx, "sh", "-c", sudoAs(c.sudo == "nopasswd")+cmd)
	x.Stdin, x.Stdout, x.Stderr = stdin, &out, &errOut
	err := x.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return []byte(out.String()), []byte(errOut.String()), 0, nil
	case errors.As(err, &ee) && ctx.Err() == nil:
		return []byte(out.String()), []byte(errOut.String()), ee.ExitCode(), nil
	default:
		return nil, nil, -1, err
	}
}

func (c *localConn) Client(context.Context) (*ssh.Client, error) {
	return nil, errors.New("localConn has no SSH client")
}

// rwc joins a pipe's read end and another's write end.
type rwc struct {
	io.Reader
	io.WriteCloser
}

// SFTP serves one SFTP session in process. The server goroutine ends when
// the client closes its pipe; kill and the test's cleanup wait for it.
func (c *localConn) SFTP(context.Context) (*sftp.Client, error) {
	c2sR, c2sW := io.Pipe()
	s2cR, s2cW := io.Pipe()
	srv, err := sftp.NewServer(rwc{c2sR, s2cW}, sftp.WithServerWorkingDirectory(c.home))
	if err != nil {
		return nil, err
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		_ = srv.Serve()
		srv.Close()
		s2cW.Close()
	}()
	cl, err := sftp.NewClientPipe(s2cR, c2sW, sftp.UseConcurrentWrites(true))
	if err != nil {
		c2sW.Close()
		return nil, err
	}
	c.mu.Lock()
	c.clients = append(c.clients, cl)
	c.mu.Unlock()
	return cl, nil
}

// kill closes every SFTP session, as a dropped connection would.
func (c *localConn) kill() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, cl := range c.clients {
		cl.Close()
	}
	c.clients = nil
}

// writeTree creates files (relative path → content) under dir.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for rel, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
