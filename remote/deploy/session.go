package deploy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/pkg/sftp"

	"github.com/bringup-dev/bringup/kernels/bundle"
	"github.com/bringup-dev/bringup/remote/sshx"
)

// session is one Sync's SFTP client and its connection.
type session struct {
	conn Conn
	host string
	c    *sftp.Client
	stop func() bool
}

func openSession(ctx context.Context, conn Conn) (*session, error) {
	host := hostOf(conn)
	c, err := openSFTP(ctx, conn)
	if err != nil {
		return nil, fmt.Errorf("%s: sftp: %w", host, err)
	}
	// SFTP calls take no context: closing the client ends them.
	stop := context.AfterFunc(ctx, func() { c.Close() })
	return &session{conn: conn, host: host, c: c, stop: stop}, nil
}

func (s *session) close() {
	s.stop()
	s.c.Close()
}

// fsyncs is true when the server flushes files on request.
func (s *session) fsyncs() bool {
	v, ok := s.c.HasExtension("fsync@openssh.com")
	return ok && v == "1"
}

// exec runs a command that must succeed.
func (s *session) exec(ctx context.Context, what, cmd string) error {
	_, errOut, code, err := s.conn.Exec(ctx, cmd)
	if err != nil {
		return fmt.Errorf("%s: %s: %w", s.host, what, err)
	}
	if code != 0 {
		return fmt.Errorf("%s: %s: %s", s.host, what, remoteErr(errOut, code))
	}
	return nil
}

// upload sends plan's uploads from localDir into dir as flat staged
// names, each flushed (when the server can) and closed.
func (s *session) upload(ctx context.Context, localDir, dir string, plan Plan, opts Options) error {
	p := &progressSink{fn: opts.Progress, total: plan.Bytes}
	return forEach(len(plan.Upload), opts.Parallel, func(i int) error {
		c := plan.Upload[i]
		if err := s.uploadOne(localDir, path.Join(dir, stagedName(i)), c, p); err != nil {
			if ctx.Err() != nil {
				err = ctx.Err()
			}
			return fmt.Errorf("%s: upload %s: %w", s.host, c.Path, err)
		}
		return nil
	})
}

// forEach calls fn(0) … fn(n-1) from up to workers goroutines, hands out
// no more work after the first error, and returns that error once every
// goroutine has stopped. The work is many small SFTP round trips, so a
// few at once hide the link's latency.
func forEach(n, workers int, fn func(i int) error) error {
	workers = max(min(workers, n), 1)
	var (
		mu    sync.Mutex
		next  int
		first error
		wg    sync.WaitGroup
	)
	take := func() (int, bool) {
		mu.Lock()
		defer mu.Unlock()
		if first != nil || next == n {
			return 0, false
		}
		next++
		return next - 1, true
	}
	for range workers {
		wg.Go(func() {
			for i, ok := take(); ok; i, ok = take() {
				if err := fn(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	return first
}

func (s *session) uploadOne(localDir, dst string, c Change, p *progressSink) error {
	src, err := os.Open(filepath.Join(localDir, filepath.FromSlash(c.Path)))
	if err != nil {
		return err
	}
	defer src.Close()
	f, err := s.c.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC)
	if err != nil {
		return fmt.Errorf("create %s: %w", dst, err)
	}
	defer f.Close()
	// Permissions first: the file is renamed into place as it is.
	if err := f.Chmod(c.Mode); err != nil {
		return fmt.Errorf("chmod %s: %w", dst, err)
	}
	p.add(c.Path, 0)
	n, err := f.ReadFrom(&countingReader{r: src, size: c.Size, file: c.Path, sink: p})
	if err != nil {
		return fmt.Errorf("write %s: %w", dst, err)
	}
	if n != c.Size {
		return fmt.Errorf("write %s: sent %d bytes, want %d (local file changed)", dst, n, c.Size)
	}
	if s.fsyncs() {
		if err := f.Sync(); err != nil {
			return fmt.Errorf("fsync %s: %w", dst, err)
		}
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", dst, err)
	}
	return nil
}

// syncDirect applies plan as a login that may write the target itself.
func (s *session) syncDirect(ctx context.Context, localDir string, tg target, plan Plan, run string, rec Record, opts Options) (bool, error) {
	// Stale staging files of interrupted runs go first: they may be
	// large, and nothing else removes them.
	if err := s.exec(ctx, "remove stale staging files", "rm -rf -- "+sshx.ShellQuote(tg.stage)); err != nil {
		return false, err
	}
	stage := path.Join(tg.stage, run)
	if len(plan.Upload) > 0 {
		if err := s.c.MkdirAll(stage); err != nil {
			return false, fmt.Errorf("%s: create %s: %w", s.host, stage, err)
		}
		if err := s.upload(ctx, localDir, stage, plan, opts); err != nil {
			return false, err
		}
		if err := checkStaged(ctx, s.conn, stage, plan.Upload); err != nil {
			return false, err
		}
	}
	if err := s.c.MkdirAll(tg.dir); err != nil {
		return false, fmt.Errorf("%s: create %s: %w", s.host, tg.dir, err)
	}
	// A symlink where the build has a directory goes first: MkdirAll
	// would take it for the directory and every rename under it would
	// land where it points, outside tg.dir. SFTP's remove unlinks the
	// link itself, never its target.
	for _, rel := range plan.Replace {
		if err := s.c.Remove(path.Join(tg.dir, rel)); err != nil && !isNotExist(err) {
			return false, fmt.Errorf("%s: replace %s (not a directory, the build has one there): %w", s.host, rel, err)
		}
	}
	// Parents first, once each, deepest last.
	var dirs []string
	seen := map[string]bool{tg.dir: true}
	for _, c := range plan.Upload {
		if d := path.Dir(path.Join(tg.dir, c.Path)); !seen[d] {
			seen[d] = true
			dirs = append(dirs, d)
		}
	}
	sort.Strings(dirs)
	for _, d := range dirs {
		if err := s.c.MkdirAll(d); err != nil {
			return false, fmt.Errorf("%s: create %s: %w", s.host, d, err)
		}
	}
	// Everything is on the host and verified: the renames follow in one
	// burst, each replacing its target atomically.
	err := forEach(len(plan.Upload), opts.Parallel, func(i int) error {
		dst := path.Join(tg.dir, plan.Upload[i].Path)
		if err := s.c.PosixRename(path.Join(stage, stagedName(i)), dst); err != nil {
			return fmt.Errorf("%s: rename into %s: %w", s.host, dst, err)
		}
		return nil
	})
	if err != nil {
		return false, err
	}
	for _, c := range plan.Chmod {
		if err := s.c.Chmod(path.Join(tg.dir, c.Path), c.Mode); err != nil {
			return false, fmt.Errorf("%s: chmod %s: %w", s.host, c.Path, err)
		}
	}
	for _, rel := range plan.Delete {
		if err := s.c.Remove(path.Join(tg.dir, rel)); err != nil && !isNotExist(err) {
			return false, fmt.Errorf("%s: delete %s: %w", s.host, rel, err)
		}
	}
	for _, rel := range plan.RemoveDir {
		// The byte-code cache of code the build no longer has goes with
		// it; a directory with any other foreign entry inside stays.
		_ = s.c.RemoveAll(path.Join(tg.dir, rel, bundle.PyCache))
		_ = s.c.RemoveDirectory(path.Join(tg.dir, rel))
	}
	if err := s.exec(ctx, "remove staging files", "rm -rf -- "+sshx.ShellQuote(tg.stage)); err != nil {
		return false, err
	}
	if err := s.writeRecord(opts.RecordDir, run, rec); err != nil {
		return false, err
	}
	return s.fsyncs(), nil
}

// writeRecord stores rec on the host, atomically, over SFTP.
func (s *session) writeRecord(dir, run string, rec Record) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("record: %w", err)
	}
	if err := s.c.MkdirAll(dir); err != nil {
		return fmt.Errorf("%s: create %s: %w", s.host, dir, err)
	}
	final := recordPath(dir, rec.Dir)
	tmp := final + ".tmp-" + run
	f, err := s.c.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC)
	if err != nil {
		return fmt.Errorf("%s: create %s: %w", s.host, tmp, err)
	}
	defer f.Close()
	if err := f.Chmod(0o644); err != nil {
		return fmt.Errorf("%s: chmod %s: %w", s.host, tmp, err)
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("%s: write %s: %w", s.host, tmp, err)
	}
	if s.fsyncs() {
		if err := f.Sync(); err != nil {
			return fmt.Errorf("%s: fsync %s: %w", s.host, tmp, err)
		}
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("%s: close %s: %w", s.host, tmp, err)
	}
	if err := s.c.PosixRename(tmp, final); err != nil {
		return fmt.Errorf("%s: rename %s: %w", s.host, final, err)
	}
	return nil
}

// Record is what Sync leaves on the host about a deployed directory.
type Record struct {
	Hash  string    `json:"hash"` // bundle.ContentHash of the deployed tree
	Dir   string    `json:"dir"`  // the remote directory
	Files int       `json:"files"`
	Bytes int64     `json:"bytes"`
	At    time.Time `json:"at"`
	By    string    `json:"by"` // the login user that deployed
}

// ErrNoRecord means nothing was ever deployed to the directory with Sync.
var ErrNoRecord = errors.New("no deploy record")

// recordPath is the record file of remote directory dir in recordDir
// (sshx.DeployRecordFile: the sudoers rule names the same file).
func recordPath(recordDir, dir string) string {
	return sshx.DeployRecordFile(recordDir, dir)
}

// ReadRecord reads the deploy record of remoteDir from recordDir on the
// host (DefaultRecordDir when empty). It is ErrNoRecord when there is
// none.
func ReadRecord(ctx context.Context, conn Conn, recordDir, remoteDir string) (Record, error) {
	if recordDir == "" {
		recordDir = DefaultRecordDir
	}
	host := hostOf(conn)
	p := recordPath(recordDir, remoteDir)
	out, errOut, code, err := conn.Exec(ctx, "[ -e "+sshx.ShellQuote(p)+" ] || exit 3; cat -- "+sshx.ShellQuote(p))
	if err != nil {
		return Record{}, fmt.Errorf("%s: read %s: %w", host, p, err)
	}
	switch code {
	case 0:
	case 3:
		return Record{}, fmt.Errorf("%s: %s: %w", host, remoteDir, ErrNoRecord)
	default:
		return Record{}, fmt.Errorf("%s: read %s: %s", host, p, remoteErr(errOut, code))
	}
	var r Record
	if err := json.Unmarshal(out, &r); err != nil {
		return Record{}, fmt.Errorf("%s: %s: %w", host, p, err)
	}
	return r, nil
}

// DeployedHash is the content hash Sync last recorded for remoteDir on
// the host. It says what was deployed, not what is there now (someone
// may have edited the tree since); RemoteHash and Check say that.
func DeployedHash(ctx context.Context, conn Conn, remoteDir string) (string, error) {
	r, err := ReadRecord(ctx, conn, "", remoteDir)
	return r.Hash, err
}
