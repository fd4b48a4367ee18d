package deploy

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/bringup-dev/bringup/kernels/bundle"
	"github.com/bringup-dev/bringup/remote/sshx"
	"github.com/bringup-dev/bringup/remote/systemd"
)

// A non-root login installs through sudo with sshx's fixed deploy
// commands only (the ones the sudoers rule allows), and nothing it sends
// grows with the size of the change in an argument: the changed files go
// as a tar stream on the stdin of `tar -x` into the root-owned staging
// directory beside the target, are verified there by sha256 as the
// login, and one rsync, reading include rules on its stdin, puts them in
// place (all renamed at the end) and deletes what the build lacks.

// stagedFiles and stagedRecord are the two entries of the staging
// directory, as sshx.DeployApplyCmd and sshx.DeployRecordCmd name them.
const (
	stagedFiles  = "files"
	stagedRecord = "record.json"
)

// sudoPlan is what the privileged steps of one sudo Sync send: the files
// to stage (uploads and permission fixes: the copy carries the mode), the
// directories the staging tree needs, and the paths rsync applies.
type sudoPlan struct {
	stage []Change    // files to send, in plan order
	dirs  []string    // directories of the staging tree, parents first
	apply []applyPath // what rsync makes equal to the staged tree: sent ones copied, absent ones deleted
	bytes int64
}

// applyPath is one path rsync applies. Whether it stands for a whole tree
// is a field, never a suffix of the name: a file may be called "***", and
// "sub/***" read back as "sub and all in it" deleted sub's other files.
type applyPath struct {
	path string // relative slash path, a name as the build has it
	tree bool   // the directory and everything under it
}

func compareApply(a, b applyPath) int {
	if c := strings.Compare(a.path, b.path); c != 0 {
		return c
	}
	switch {
	case a.tree == b.tree:
		return 0
	case a.tree:
		return 1
	}
	return -1
}

// planSudo turns plan into what the privileged steps send. Deletions are
// listed by their topmost removed directory (rsync --force removes it
// whole, byte-code caches included), except that a directory holding an
// entry Sync leaves alone (Plan.Foreign) stays: then its removed files
// are listed one by one and only its __pycache__ goes, as the direct path
// does. Every listed path's parent is a directory of the staging tree:
// rsync deletes only in directories it descends into.
func planSudo(plan Plan) sudoPlan {
	var sp sudoPlan
	sp.stage = append(append([]Change{}, plan.Upload...), plan.Chmod...)
	for _, c := range sp.stage {
		sp.bytes += c.Size
		sp.apply = append(sp.apply, applyPath{path: c.Path})
	}
	removed := map[string]bool{}
	for _, d := range plan.RemoveDir {
		removed[d] = true
	}
	holdsForeign := func(d string) bool {
		return slices.ContainsFunc(plan.Foreign, func(f string) bool { return strings.HasPrefix(f, d+"/") })
	}
	gone := func(d string) bool { return removed[d] && !holdsForeign(d) }
	covered := func(p string) bool {
		for d := path.Dir(p); d != "."; d = path.Dir(d) {
			if gone(d) {
				return true
			}
		}
		return false
	}
	for _, d := range plan.RemoveDir {
		switch {
		case covered(d):
		case gone(d):
			sp.apply = append(sp.apply, applyPath{path: d, tree: true})
		default:
			sp.apply = append(sp.apply, applyPath{path: path.Join(d, bundle.PyCache), tree: true})
		}
	}
	for _, f := range plan.Delete {
		if !covered(f) {
			sp.apply = append(sp.apply, applyPath{path: f})
		}
	}
	slices.SortFunc(sp.apply, compareApply)
	sp.apply = slices.Compact(sp.apply)
	dirs := map[string]bool{}
	for _, p := range sp.apply {
		for d := path.Dir(p.path); d != "."; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	for d := range dirs {
		sp.dirs = append(sp.dirs, d)
	}
	// Parents first: fewer path separators first, then by name.
	sort.Slice(sp.dirs, func(i, j int) bool {
		a, b := sp.dirs[i], sp.dirs[j]
		if da, db := strings.Count(a, "/"), strings.Count(b, "/"); da != db {
			return da < db
		}
		return a < b
	})
	return sp
}

// writeStage writes the staging tree as a tar stream: files/ with its
// directories and the staged files (owner root, the build's modes), then
// record.json. Reads of local files report progress to sink.
func writeStage(w io.Writer, localDir string, sp sudoPlan, rec []byte, at time.Time, sink *progressSink) error {
	tw := tar.NewWriter(w)
	hdr := func(name string, typ byte, mode int64, size int64) *tar.Header {
		return &tar.Header{Name: name, Typeflag: typ, Mode: mode, Size: size, ModTime: at, Uname: "root", Gname: "root"}
	}
	if err := tw.WriteHeader(hdr(stagedFiles+"/", tar.TypeDir, 0o755, 0)); err != nil {
		return err
	}
	for _, d := range sp.dirs {
		if err := tw.WriteHeader(hdr(stagedFiles+"/"+d+"/", tar.TypeDir, 0o755, 0)); err != nil {
			return err
		}
	}
	for _, c := range sp.stage {
		if err := writeStagedFile(tw, localDir, c, hdr(stagedFiles+"/"+c.Path, tar.TypeReg, int64(c.Mode.Perm()), c.Size), sink); err != nil {
			return err
		}
	}
	if err := tw.WriteHeader(hdr(stagedRecord, tar.TypeReg, 0o644, int64(len(rec)))); err != nil {
		return err
	}
	if _, err := tw.Write(rec); err != nil {
		return err
	}
	return tw.Close()
}

func writeStagedFile(tw *tar.Writer, localDir string, c Change, h *tar.Header, sink *progressSink) error {
	f, err := os.Open(filepath.Join(localDir, filepath.FromSlash(c.Path)))
	if err != nil {
		return err
	}
	defer f.Close()
	if err := tw.WriteHeader(h); err != nil {
		return err
	}
	sink.add(c.Path, 0)
	n, err := io.Copy(tw, &countingReader{r: io.LimitReader(f, c.Size+1), size: c.Size, file: c.Path, sink: sink})
	if err != nil {
		return fmt.Errorf("send %s: %w", c.Path, err)
	}
	if n != c.Size {
		return fmt.Errorf("send %s: read %d bytes, want %d (local file changed)", c.Path, n, c.Size)
	}
	return nil
}

// syncSudo applies plan as a login that needs sudo to write the target.
// The steps, each a fixed command (sshx.Deploy…Cmd) run through sudo -n
// unless marked "as the login":
//
//  1. remove what a cut run left in the staging directory; make it, the
//     target and the record directory;
//  2. unpack the tar stream of the changed files and the record into it;
//  3. as the login: list the staged files, check every sha256 and mode
//     against the build, and flush the file system;
//  4. rsync the staged files into place (renamed at the end, all in a
//     burst) and delete the removed ones, as include rules on its stdin
//     say (applyRules);
//  5. put the record in place, remove the staging directory, and as the
//     login flush the target's file system.
//
// A cut before step 4 leaves the target as it was.
func (s *session) syncSudo(ctx context.Context, localDir string, tg target, plan Plan, rec Record, opts Options) (bool, error) {
	sp := planSudo(plan)
	recJSON, err := json.Marshal(rec)
	if err != nil {
		return false, fmt.Errorf("record: %w", err)
	}
	recJSON = append(recJSON, '\n')
	if err := s.exec(ctx, "prepare "+tg.stage, sshx.DeployCleanCmd(tg.dir).Line(true)+" && "+sshx.DeployMkdirCmd(tg.dir, opts.RecordDir).Line(true)); err != nil {
		return false, err
	}

	sink := &progressSink{fn: opts.Progress, total: sp.bytes}
	pr, pw := io.Pipe()
	wrote := make(chan error, 1)
	go func() {
		// Big writes: the stream is thousands of 512-byte tar blocks, and
		// each write to the pipe becomes an SSH packet of its own.
		bw := bufio.NewWriterSize(pw, 256<<10)
		err := writeStage(bw, localDir, sp, recJSON, rec.At, sink)
		if err == nil {
			err = bw.Flush()
		}
		pw.CloseWithError(err)
		wrote <- err
	}()
	_, errOut, code, xerr := s.conn.ExecInput(ctx, sshx.DeployUnpackCmd(tg.dir).Line(true), pr)
	// The remote end may have stopped reading: unblock the writer.
	pr.CloseWithError(io.ErrClosedPipe)
	werr := <-wrote
	switch {
	case werr != nil && ctx.Err() == nil && xerr == nil && code == 0:
		return false, fmt.Errorf("%s: send %s: %w", s.host, tg.stage, werr)
	case xerr != nil:
		return false, fmt.Errorf("%s: unpack into %s: %w", s.host, tg.stage, xerr)
	case code != 0:
		return false, fmt.Errorf("%s: unpack into %s: %w", s.host, tg.stage, sudoErr(s.host, errOut, code))
	case werr != nil:
		return false, fmt.Errorf("%s: send %s: %w", s.host, tg.stage, werr)
	}

	if err := s.checkStage(ctx, tg, sp); err != nil {
		return false, err
	}
	if _, errOut, code, err := s.conn.ExecInput(ctx, sshx.DeployApplyCmd(tg.dir).Line(true), bytes.NewReader(applyRules(sp))); err != nil {
		return false, fmt.Errorf("%s: install into %s: %w", s.host, tg.dir, err)
	} else if code != 0 {
		return false, fmt.Errorf("%s: install into %s: %w", s.host, tg.dir, sudoErr(s.host, errOut, code))
	}
	if err := s.exec(ctx, "record "+rec.Dir, sshx.DeployRecordCmd(tg.dir, opts.RecordDir).Line(true)+" && "+sshx.DeployCleanCmd(tg.dir).Line(true)); err != nil {
		return false, err
	}
	if err := s.exec(ctx, "flush "+tg.dir, "sync -f -- "+sshx.ShellQuote(tg.dir)); err != nil {
		return false, err
	}
	return true, nil
}

// checkStage lists the staging tree as the login and checks that it holds
// exactly the staged files with the build's checksums and modes, then
// flushes its file system, so that what rsync copies is on disk.
func (s *session) checkStage(ctx context.Context, tg target, sp sudoPlan) error {
	dir := path.Join(tg.stage, stagedFiles)
	rt, missing, err := listRemote(ctx, s.conn, dir)
	if err != nil {
		return fmt.Errorf("verify staged files: %w", err)
	}
	if missing {
		return fmt.Errorf("%s: verify staged files: %s is missing", s.host, dir)
	}
	for _, c := range sp.stage {
		f, ok := rt.files[c.Path]
		switch {
		case !ok:
			return fmt.Errorf("%s: verify %s: not staged", s.host, c.Path)
		case f.Sum != c.Sum:
			return fmt.Errorf("%s: verify %s: staged copy has sha256 %s, want %s", s.host, c.Path, f.Sum, c.Sum)
		case f.Mode != c.Mode.Perm():
			return fmt.Errorf("%s: verify %s: staged copy has mode %04o, want %04o", s.host, c.Path, f.Mode, c.Mode.Perm())
		}
	}
	if len(rt.files) != len(sp.stage) || len(rt.other) > 0 {
		return fmt.Errorf("%s: verify staged files: %d files and %d other entries staged, want %d files", s.host, len(rt.files), len(rt.other), len(sp.stage))
	}
	return s.exec(ctx, "flush "+tg.stage, "sync -f -- "+sshx.ShellQuote(tg.stage))
}

// applyRules are rsync's include rules for sp (DeployApplyCmd's stdin):
// the staging tree's directories, so that rsync descends into them; each
// applied path, anchored ("/d/***" for a tree); then "- *": everything
// else is neither sent nor deleted. Every name is data: rsyncPattern
// makes each rule match its own path alone.
func applyRules(sp sudoPlan) []byte {
	var b bytes.Buffer
	add := func(rule string) {
		b.WriteString(rule)
		b.WriteByte(0)
	}
	for _, d := range sp.dirs {
		add("/" + rsyncPattern(d, "/"))
	}
	for _, p := range sp.apply {
		if p.tree {
			add("/" + rsyncPattern(p.path, "/***"))
			continue
		}
		add("/" + rsyncPattern(p.path, ""))
	}
	add("- *")
	return b.Bytes()
}

// rsyncPattern is the rsync pattern matching name, then suffix (itself a
// pattern: "", "/" or "/***"), and nothing else. rsync reads backslashes
// as escapes only in a pattern with a wildcard character in it, so in
// such a pattern every wildcard character and backslash of the name is
// escaped, and in any other the name is left as it is.
func rsyncPattern(name, suffix string) string {
	if !strings.ContainsAny(name+suffix, "*?[") {
		return name + suffix
	}
	var b strings.Builder
	for _, r := range name {
		if strings.ContainsRune(`*?[\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String() + suffix
}

// sudoErr describes a failed privileged command: sudo's own refusal
// (ErrSudo, classified as systemd.SudoRefusal does for every sudo -n) or
// the command's first error line.
func sudoErr(host string, errOut []byte, code int) error {
	msg := remoteErr(errOut, code)
	if serr := systemd.SudoRefusal(host, string(errOut)); serr != nil {
		return fmt.Errorf("%w: %w", ErrSudo, serr)
	}
	return fmt.Errorf("%s", msg)
}

// sudoCheckLine asks sudo, without running anything, whether the login
// may run each of cmds; it prints the index of the first refused one.
func sudoCheckLine(cmds []sshx.RootCmd) string {
	parts := make([]string, len(cmds))
	for i, c := range cmds {
		parts[i] = c.CheckLine() + " >/dev/null || { echo " + strconv.Itoa(i) + "; exit 1; }"
	}
	return strings.Join(parts, "; ")
}
