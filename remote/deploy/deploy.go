// Package deploy redeploys a kernel's directory to a host: it makes the
// remote directory (for example /opt/kdtree/site, on the service's
// PYTHONPATH) equal to a local build, sending only the files that differ.
//
// Each changed file goes to a staging directory beside the target (same
// file system), is fsynced, checked by sha256 on the host, and only then
// renamed into place with posix-rename@openssh.com, which replaces the
// target atomically: a cut connection leaves every file old or new, never
// partial, and the next Sync removes the stale staging files. Files the
// local build no longer has are deleted, but only inside the remote
// directory. A non-root login streams the changed files into a root-owned
// staging directory and installs them with a few fixed commands through
// `sudo -n` (sshx.DeployUnpackCmd and friends: what a sudoers rule can
// allow one by one; the data goes on stdin, never in an argument); a sudo
// that wants a password is an error within seconds, never a prompt.
//
// The content hash (bundle.ContentHash) is the one infersim logs for the
// directory it loads, and each Sync records it on the host
// (/var/lib/bringup/deployed), so a fleet view can show drift between the
// local build and the hosts, and between hosts (kernels.CompareHashes).
package deploy

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bringup-dev/bringup/kernels/bundle"
	"github.com/bringup-dev/bringup/remote/sshx"
)

// Privilege says how the install step gets the rights to write the
// remote directory.
type Privilege int

// The privileges. PrivAuto asks the host for the login's uid: root writes
// directly over SFTP, anyone else goes through sudo -n.
const (
	PrivAuto Privilege = iota
	PrivDirect
	PrivSudo
)

// DefaultRecordDir is where Sync records each deployed directory's
// content hash on the host. It is outside the deployed tree on purpose:
// infersim hashes every file of the tree, so a record inside it would
// change the hash it records.
const DefaultRecordDir = "/var/lib/bringup/deployed"

// DefaultSudoTimeout bounds the `sudo -n true` check. sudo -n never
// prompts; the bound is for a sudo stuck elsewhere (a slow name lookup).
const DefaultSudoTimeout = 10 * time.Second

// DefaultParallel is how many files Sync sends at once: enough to hide
// the per-file round trips (open, chmod, write, fsync, close) on a
// distant host without flooding the SSH channel.
const DefaultParallel = 4

// Options tune Sync and Check. The zero value is usable.
type Options struct {
	// Progress, if set, is called as upload bytes are read: the UI draws
	// the bar from it. Calls come one at a time, but from the goroutines
	// of concurrent uploads, never after Sync returns.
	Progress func(Progress)
	// Parallel is how many files are uploaded (and renamed) at once;
	// default DefaultParallel.
	Parallel int
	// Privilege defaults to PrivAuto.
	Privilege Privilege
	// RecordDir defaults to DefaultRecordDir.
	RecordDir string
	// SudoTimeout defaults to DefaultSudoTimeout.
	SudoTimeout time.Duration
	// Now stamps the record; default time.Now.
	Now func() time.Time
}

func (o Options) withDefaults() Options {
	if o.RecordDir == "" {
		o.RecordDir = DefaultRecordDir
	}
	if o.SudoTimeout <= 0 {
		o.SudoTimeout = DefaultSudoTimeout
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Parallel <= 0 {
		o.Parallel = DefaultParallel
	}
	if o.Progress == nil {
		o.Progress = func(Progress) {}
	}
	return o
}

// Progress is the state of a Sync's uploads.
type Progress struct {
	File  string // the file being sent, relative to the directory
	Done  int64  // bytes sent so far, over all files
	Total int64  // bytes to send in all
}

// Change is one file Sync sends or adjusts.
type Change struct {
	Path string      // relative slash path
	Size int64       // local size
	Mode os.FileMode // local permissions
	Sum  string      // local sha256, hex
}

// Plan is what Sync would do to make a remote directory equal to the local
// build.
type Plan struct {
	Hash      string   // the local build's content hash
	Upload    []Change // new or changed content, in walk order
	Chmod     []Change // same content, other permissions
	Delete    []string // remote files the local build does not have
	RemoveDir []string // remote directories the local build does not have, deepest first
	Unchanged int      // files already equal
	Bytes     int64    // bytes to upload
	Missing   bool     // the remote directory does not exist yet
	// Foreign are remote entries that are neither files nor directories
	// (symlinks, sockets); Sync leaves them alone unless a local file
	// takes their place.
	Foreign []string
	// Replace are the foreign entries a build directory needs the place
	// of (a symlink where the build has sub/): Sync removes each, never
	// what it points to, before anything is written under its name. A
	// write through it would land outside the remote directory.
	Replace []string
}

// InSync is true when the remote directory already equals the build.
func (p Plan) InSync() bool {
	return len(p.Upload)+len(p.Chmod)+len(p.Delete)+len(p.RemoveDir)+len(p.Replace) == 0 && !p.Missing
}

// Result is what a Sync did.
type Result struct {
	Hash      string   // content hash now deployed (equal to the local build's)
	Uploaded  []string // files sent
	Chmodded  []string // files whose permissions alone were fixed
	Deleted   []string // files removed
	Replaced  []string // foreign entries (symlinks) removed to make room for a build directory
	Unchanged int
	Bytes     int64 // bytes sent
	Sudo      bool  // the install step ran through sudo -n
	// Fsynced is true when the host supports fsync@openssh.com and each
	// file was flushed before its rename; with sudo, when the staged
	// copies were flushed before rsync copied them into place and the
	// target's file system after (`sync -f`: rsync older than 3.2.4 has
	// no --fsync).
	Fsynced bool
	Record  Record // what was recorded on the host
}

// ErrSudo marks a non-root login whose sudo cannot run without a password
// (or at all).
var ErrSudo = errors.New("sudo -n failed")

// target is a checked remote directory with its derived paths.
type target struct {
	dir   string // the deployed directory, clean and absolute
	stage string // staging root beside it, same file system
}

func newTarget(dir string) (target, error) {
	if !path.IsAbs(dir) || path.Clean(dir) != dir {
		return target{}, fmt.Errorf("remote dir %q: want a clean absolute path", dir)
	}
	// Sync deletes what the local build lacks: never at the top of the
	// file system or one level below it (/opt, /usr).
	if strings.Count(dir, "/") < 2 {
		return target{}, fmt.Errorf("remote dir %q: refusing a directory less than two levels deep", dir)
	}
	return target{dir: dir, stage: sshx.DeployStage(dir)}, nil
}

// readLocal walks the local build and refuses what Sync cannot mirror.
func readLocal(localDir string) (bundle.Tree, error) {
	t, err := bundle.Walk(os.DirFS(localDir))
	if err != nil {
		return bundle.Tree{}, fmt.Errorf("local build %s: %w", localDir, err)
	}
	if len(t.Other) > 0 {
		return bundle.Tree{}, fmt.Errorf("local build %s: %s is not a regular file or directory (symlinks are not deployed)", localDir, t.Other[0])
	}
	if len(t.Files) == 0 {
		// An empty build would delete everything on the host: far more
		// likely a wrong path than a wish.
		return bundle.Tree{}, fmt.Errorf("local build %s: no files", localDir)
	}
	return t, nil
}

// prepare checks the remote directory and reads the local build.
func prepare(localDir, remoteDir string) (target, bundle.Tree, error) {
	tg, err := newTarget(remoteDir)
	if err != nil {
		return target{}, bundle.Tree{}, err
	}
	local, err := readLocal(localDir)
	return tg, local, err
}

// listRemote lists dir on the host as the login user.
func listRemote(ctx context.Context, conn Conn, dir string) (remoteTree, bool, error) {
	host := hostOf(conn)
	out, errOut, code, err := conn.Exec(ctx, listScript(dir))
	if err != nil {
		return remoteTree{}, false, fmt.Errorf("%s: list %s: %w", host, dir, err)
	}
	switch code {
	case 0:
	case listMissing:
		return remoteTree{files: map[string]bundle.File{}, dirs: map[string]bool{}, other: map[string]bool{}}, true, nil
	case listNotDir:
		return remoteTree{}, false, fmt.Errorf("%s: %s exists and is not a directory", host, dir)
	default:
		return remoteTree{}, false, fmt.Errorf("%s: list %s: %s", host, dir, remoteErr(errOut, code))
	}
	rt, err := parseListing(out)
	if err != nil {
		return remoteTree{}, false, fmt.Errorf("%s: list %s: %w", host, dir, err)
	}
	return rt, false, nil
}

// diff plans the changes that make remote equal to local.
func diff(local bundle.Tree, remote remoteTree, missing bool) Plan {
	p := Plan{Hash: local.Hash, Missing: missing}
	want := map[string]bool{}
	for _, f := range local.Files {
		want[f.Path] = true
		c := Change{Path: f.Path, Size: f.Size, Mode: f.Mode, Sum: f.Sum}
		r, ok := remote.files[f.Path]
		switch {
		case !ok || r.Sum != f.Sum:
			p.Upload = append(p.Upload, c)
			p.Bytes += f.Size
		case r.Mode != f.Mode:
			p.Chmod = append(p.Chmod, c)
		default:
			p.Unchanged++
		}
	}
	wantDir := map[string]bool{}
	for _, d := range local.Dirs {
		wantDir[d] = true
	}
	for rel := range remote.files {
		if !want[rel] {
			p.Delete = append(p.Delete, rel)
		}
	}
	sort.Strings(p.Delete)
	for d := range remote.dirs {
		if !wantDir[d] {
			p.RemoveDir = append(p.RemoveDir, d)
		}
	}
	// Deepest first, so that each is empty when its turn comes.
	sort.Slice(p.RemoveDir, func(i, j int) bool {
		a, b := p.RemoveDir[i], p.RemoveDir[j]
		if da, db := strings.Count(a, "/"), strings.Count(b, "/"); da != db {
			return da > db
		}
		return a < b
	})
	for rel := range remote.other {
		p.Foreign = append(p.Foreign, rel)
		if wantDir[rel] {
			p.Replace = append(p.Replace, rel)
		}
	}
	sort.Strings(p.Foreign)
	sort.Strings(p.Replace)
	return p
}

// Check plans a Sync of localDir to remoteDir on conn's host without
// changing anything: the cheap, exact answer to "is this host running the
// local build?" (one command; only checksums cross the network).
func Check(ctx context.Context, conn Conn, localDir, remoteDir string) (Plan, error) {
	tg, local, err := prepare(localDir, remoteDir)
	if err != nil {
		return Plan{}, err
	}
	rt, missing, err := listRemote(ctx, conn, tg.dir)
	if err != nil {
		return Plan{}, err
	}
	return diff(local, rt, missing), nil
}

// Sync makes remoteDir on conn's host equal to localDir: it uploads new
// and changed files (staged, fsynced, verified by sha256 on the host, then
// renamed into place), fixes permissions, deletes files and directories
// the build lacks, removes stale staging files of earlier runs, records
// the content hash on the host and finally lists the directory again to
// prove every file equal to the build. Files are owned by root (or by the
// login when it writes directly without being root).
//
// Concurrent Syncs of one directory are not supported: each removes the
// other's staging files.
func Sync(ctx context.Context, conn Conn, localDir, remoteDir string, opts Options) (Result, error) {
	opts = opts.withDefaults()
	host := hostOf(conn)
	tg, local, err := prepare(localDir, remoteDir)
	if err != nil {
		return Result{}, err
	}
	who, err := whoami(ctx, conn)
	if err != nil {
		return Result{}, err
	}
	sudo := opts.Privilege == PrivSudo || opts.Privilege == PrivAuto && who.uid != 0
	if sudo {
		if err := checkSudo(ctx, conn, who.name, tg.dir, opts); err != nil {
			return Result{}, err
		}
	}
	rt, missing, err := listRemote(ctx, conn, tg.dir)
	if err != nil {
		return Result{}, err
	}
	plan := diff(local, rt, missing)

	run := runID()
	rec := Record{Hash: local.Hash, Dir: tg.dir, Files: len(local.Files), Bytes: local.Bytes, At: opts.Now().UTC(), By: who.name}
	res := Result{Hash: local.Hash, Unchanged: plan.Unchanged, Bytes: plan.Bytes, Sudo: sudo, Record: rec}
	for _, c := range plan.Upload {
		res.Uploaded = append(res.Uploaded, c.Path)
	}
	for _, c := range plan.Chmod {
		res.Chmodded = append(res.Chmodded, c.Path)
	}
	res.Deleted = plan.Delete
	res.Replaced = plan.Replace

	s, err := openSession(ctx, conn)
	if err != nil {
		return Result{}, err
	}
	defer s.close()
	if sudo {
		res.Fsynced, err = s.syncSudo(ctx, localDir, tg, plan, rec, opts)
	} else {
		res.Fsynced, err = s.syncDirect(ctx, localDir, tg, plan, run, rec, opts)
	}
	if err != nil {
		return Result{}, err
	}

	// The proof: every file on the host now has the build's checksum
	// and permissions, and nothing else is there.
	after, _, err := listRemote(ctx, conn, tg.dir)
	if err != nil {
		return Result{}, fmt.Errorf("verify: %w", err)
	}
	if p := diff(local, after, false); len(p.Upload)+len(p.Chmod)+len(p.Delete) > 0 {
		return Result{}, fmt.Errorf("%s: verify %s after sync: %d files differ, %d modes differ, %d extra files (first: %s)",
			host, tg.dir, len(p.Upload), len(p.Chmod), len(p.Delete), firstOf(p))
	}
	return res, nil
}

func firstOf(p Plan) string {
	switch {
	case len(p.Upload) > 0:
		return p.Upload[0].Path
	case len(p.Chmod) > 0:
		return p.Chmod[0].Path
	case len(p.Delete) > 0:
		return p.Delete[0]
	}
	return "-"
}

// runID names one Sync's staging files.
func runID() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return hex.EncodeToString(b)
}

// login is the remote user Sync runs as.
type login struct {
	uid  int
	name string
}

func whoami(ctx context.Context, conn Conn) (login, error) {
	host := hostOf(conn)
	out, errOut, code, err := conn.Exec(ctx, "id -u; id -un")
	if err != nil {
		return login{}, fmt.Errorf("%s: id: %w", host, err)
	}
	if code != 0 {
		return login{}, fmt.Errorf("%s: id: %s", host, remoteErr(errOut, code))
	}
	f := strings.Fields(string(out))
	if len(f) != 2 {
		return login{}, fmt.Errorf("%s: id: unexpected output %q", host, out)
	}
	uid, err := strconv.Atoi(f[0])
	if err != nil {
		return login{}, fmt.Errorf("%s: id -u: %q: %w", host, f[0], err)
	}
	return login{uid: uid, name: f[1]}, nil
}

// checkSudo proves, before anything is sent, that sudo -n lets the
// login run each privileged step of a deploy to dir (`sudo -n -l`, which
// runs nothing), so that a login without them fails fast and leaves the
// host alone.
func checkSudo(ctx context.Context, conn Conn, user, dir string, opts Options) error {
	host := hostOf(conn)
	ctx, cancel := context.WithTimeout(ctx, opts.SudoTimeout)
	defer cancel()
	cmds := sshx.Scope{KernelDirs: []string{dir}, RecordDir: opts.RecordDir}.DeployCommands()
	out, errOut, code, err := conn.Exec(ctx, sudoCheckLine(cmds))
	if err != nil {
		return fmt.Errorf("%s: sudo -n -l (as %s): %w", host, user, err)
	}
	if code != 0 {
		what := "its install commands"
		if i, perr := strconv.Atoi(strings.TrimSpace(string(out))); perr == nil && i >= 0 && i < len(cmds) {
			what = cmds[i].String()
		}
		return fmt.Errorf("%s: %w as %s (%s): redeploy as a non-root user needs passwordless sudo (NOPASSWD) for %s; `bringup doctor %s` prints the sudoers rule, or deploy as root",
			host, ErrSudo, user, remoteErr(errOut, code), what, host)
	}
	return nil
}

// progressSink adds up the bytes of concurrent uploads and calls the
// Progress callback one call at a time.
type progressSink struct {
	mu    sync.Mutex
	fn    func(Progress)
	done  int64
	total int64
}

func (p *progressSink) add(file string, n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done += n
	p.fn(Progress{File: file, Done: p.done, Total: p.total})
}

// countingReader reports upload progress as the SFTP client reads.
type countingReader struct {
	r    io.Reader
	size int64
	file string
	sink *progressSink
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if n > 0 {
		c.sink.add(c.file, int64(n))
	}
	return n, err
}

// Size lets the SFTP client choose concurrent writes.
func (c *countingReader) Size() int64 { return c.size }

// stagedName is the flat name of upload i in a run's staging directory.
func stagedName(i int) string { return strconv.Itoa(i) }

// checkStaged verifies the staged uploads by sha256 on the host, as the
// login user, from one listing of the staging directory: nothing on the
// command line grows with the number of files (an argument per file
// failed with "argument list too long" past about 20 000).
func checkStaged(ctx context.Context, conn Conn, dir string, ups []Change) error {
	if len(ups) == 0 {
		return nil
	}
	host := hostOf(conn)
	rt, missing, err := listRemote(ctx, conn, dir)
	if err != nil {
		return fmt.Errorf("verify staged files: %w", err)
	}
	if missing {
		return fmt.Errorf("%s: verify staged files: %s is missing", host, dir)
	}
	for i, c := range ups {
		f, ok := rt.files[stagedName(i)]
		switch {
		case !ok:
			return fmt.Errorf("%s: verify %s: not staged", host, c.Path)
		case f.Sum != c.Sum:
			return fmt.Errorf("%s: verify %s: staged copy has sha256 %q, want %s", host, c.Path, f.Sum, c.Sum)
		}
	}
	return nil
}
