package scalerig

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/bringup-dev/bringup/remote/testkit/testbed"
)

// Store is a VictoriaLogs process the rig started, on loopback, with its
// data in a directory of its own.
type Store struct {
	URL  string
	cmd  *exec.Cmd
	done chan struct{}
	dir  string
}

// StoreBinary finds victoria-logs as the testbed does: its environment
// variable, else the testbed cache's build (.ci/deps builds it).
func StoreBinary() (string, error) {
	if p := os.Getenv(testbed.EnvVictoriaLogs); p != "" {
		return p, nil
	}
	p := testbed.VictoriaLogsBinary(testbed.DefaultCacheDir)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("scalerig: no victoria-logs at %s (set $%s or run .ci/deps): %w", p, testbed.EnvVictoriaLogs, err)
	}
	return p, nil
}

// StartStore starts victoria-logs with the testbed's flags (journald's
// entry metadata kept, so __CURSOR is) and waits for /health.
func StartStore(ctx context.Context, bin, dir string) (*Store, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("scalerig: pick a port: %w", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	logf, err := os.Create(filepath.Join(dir, "victorialogs.log"))
	if err != nil {
		return nil, fmt.Errorf("scalerig: %w", err)
	}
	defer logf.Close()
	cmd := exec.Command(bin, "-storageDataPath="+filepath.Join(dir, "data"), "-httpListenAddr=127.0.0.1:"+strconv.Itoa(port),
		"-journald.includeEntryMetadata", "-retentionPeriod=1d", "-loggerOutput=stderr")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("scalerig: start %s: %w", bin, err)
	}
	s := &Store{URL: "http://127.0.0.1:" + strconv.Itoa(port), cmd: cmd, done: make(chan struct{}), dir: dir}
	go func() { _ = cmd.Wait(); close(s.done) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(s.URL + "/health")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s, nil
			}
		}
		select {
		case <-s.done:
			return nil, fmt.Errorf("scalerig: victoria-logs exited; see %s", logf.Name())
		case <-ctx.Done():
			s.Stop()
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.Stop()
			return nil, errors.New("scalerig: victoria-logs did not answer /health in 30 s")
		}
	}
}

// PID is the store process's id.
func (s *Store) PID() int { return s.cmd.Process.Pid }

// Stop ends the store and waits for it.
func (s *Store) Stop() {
	_ = s.cmd.Process.Signal(os.Interrupt)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
}

// Insert posts entries to the store's journald endpoint, as
// systemd-journal-upload posts to URL/upload.
func (s *Store) Insert(ctx context.Context, entries []Entry) error {
	var b bytes.Buffer
	for _, e := range entries {
		appendExport(&b, e)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"/insert/journald/upload", &b)
	if err != nil {
		return fmt.Errorf("scalerig: insert: %w", err)
	}
	req.Header.Set("Content-Type", "application/vnd.fdo.journal")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("scalerig: insert: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("scalerig: insert: %s: %s", resp.Status, msg)
	}
	return nil
}

// Flush asks the store to make what it took searchable now
// (/internal/force_flush), so a query right after a backlog sees it all.
func (s *Store) Flush(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/internal/force_flush", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("scalerig: flush: %w", err)
	}
	return resp.Body.Close()
}
