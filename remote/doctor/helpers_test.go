package doctor

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/remote/event"
)

// events keeps the commands an action ran (KindCommand), for errors.
type events struct {
	mu   sync.Mutex
	cmds []string
	up   chan struct{} // closed at the first connection
	once sync.Once
}

func newEvents() *events { return &events{up: make(chan struct{})} }

// waitUp waits for the host's first connection: actions go over it.
func (e *events) waitUp(t *testing.T) {
	t.Helper()
	select {
	case <-e.up:
	case <-time.After(30 * time.Second):
		t.Fatal("no connection after 30 s")
	}
}

func (e *events) emit(ev event.Event) bool {
	if ev.Kind == event.KindConn && ev.Conn != nil && ev.Conn.State == event.ConnUp {
		e.once.Do(func() { close(e.up) })
	}
	if ev.Kind == event.KindCommand && ev.Command != nil {
		e.mu.Lock()
		e.cmds = append(e.cmds, fmt.Sprintf("[%s] %s → exit %d %s", ev.Command.Via, ev.Command.Text, ev.Command.Exit, ev.Command.Err))
		e.mu.Unlock()
	}
	return true
}

func (e *events) all() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string{}, e.cmds...)
}

func (e *events) commands(n int) string {
	all := e.all()
	return strings.Join(all[max(0, len(all)-n):], "\n")
}

// localBuild is a kernel's local build that a test writes and changes.
type localBuild struct {
	t   *testing.T
	dir string
}

// put writes the file rel (a slash path) with content, mode 0644.
func (b localBuild) put(rel, content string) {
	b.t.Helper()
	p := filepath.Join(b.dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		b.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// remove deletes rel and all under it.
func (b localBuild) remove(rel string) {
	b.t.Helper()
	if err := os.RemoveAll(filepath.Join(b.dir, filepath.FromSlash(rel))); err != nil {
		b.t.Fatal(err)
	}
}

// chmod sets rel's permissions.
func (b localBuild) chmod(rel string, mode os.FileMode) {
	b.t.Helper()
	if err := os.Chmod(filepath.Join(b.dir, filepath.FromSlash(rel)), mode); err != nil {
		b.t.Fatal(err)
	}
}
