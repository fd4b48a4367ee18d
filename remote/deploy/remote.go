package deploy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strconv"
	"strings"

	"github.com/pkg/sftp"
	"golang.org/x/crypto/ssh"

	"github.com/bringup-dev/bringup/kernels/bundle"
	"github.com/bringup-dev/bringup/remote/sanitize"
	"github.com/bringup-dev/bringup/remote/sshx"
)

// Conn is what deploy needs of a host connection; *sshx.Conn has it.
// Exec returns the exit code of cmd (not an error when non-zero); Client
// gives the SSH client the SFTP subsystem is opened on. A Conn that also
// has SFTP(ctx) (*sftp.Client, error) is asked for its SFTP client
// instead (tests serve SFTP in process), and one with Host() string names
// the host in errors.
type Conn interface {
	Exec(ctx context.Context, cmd string) (stdout, stderr []byte, exitCode int, err error)
	// ExecInput is Exec with stdin as the command's standard input: the
	// privileged steps read their content (a tar stream, rsync's rules)
	// from it.
	ExecInput(ctx context.Context, cmd string, stdin io.Reader) (stdout, stderr []byte, exitCode int, err error)
	Client(ctx context.Context) (*ssh.Client, error)
}

// sftpOpener is a Conn that provides its own SFTP client.
type sftpOpener interface {
	SFTP(ctx context.Context) (*sftp.Client, error)
}

// hostOf names conn's host for error messages.
func hostOf(conn Conn) string {
	if h, ok := conn.(interface{ Host() string }); ok && h.Host() != "" {
		return h.Host()
	}
	return "host"
}

// openSFTP starts an SFTP session on conn. Concurrent writes make uploads
// of large files fast; they are safe here because a failed upload's temp
// file is never renamed into place.
func openSFTP(ctx context.Context, conn Conn) (*sftp.Client, error) {
	if o, ok := conn.(sftpOpener); ok {
		return o.SFTP(ctx)
	}
	cl, err := conn.Client(ctx)
	if err != nil {
		return nil, err
	}
	return sftp.NewClient(cl, sftp.UseConcurrentWrites(true))
}

// remoteErr describes a failed remote command by its first stderr line.
func remoteErr(stderr []byte, code int) string {
	line, _, _ := strings.Cut(strings.TrimSpace(string(stderr)), "\n")
	line, _ = sanitize.Line(line, 300)
	if line == "" {
		return fmt.Sprintf("exit status %d", code)
	}
	return fmt.Sprintf("exit status %d: %s", code, line)
}

// Exit codes of listScript.
const (
	listMissing = 3 // the directory does not exist
	listNotDir  = 4 // the path exists but is not a directory
)

// listScript lists dir as NUL-terminated records: "d MODE PATH" for each
// directory, "f MODE SIZE PATH" for each regular file, "o MODE PATH" for
// anything else, then a "--" record, then sha256sum -z lines for every
// regular file. MODE is octal permissions, PATH is relative to dir. GNU
// find and coreutils (every mainstream Linux) are assumed.
func listScript(dir string) string {
	q := sshx.ShellQuote(dir)
	return "export LC_ALL=C; [ -e " + q + " ] || exit " + strconv.Itoa(listMissing) +
		"; [ -d " + q + " ] || exit " + strconv.Itoa(listNotDir) +
		"; cd -- " + q + " && find . -mindepth 1 -name " + bundle.PyCache + " -prune -o \\( -type d -printf 'd %m %P\\0' \\) -o \\( -type f -printf 'f %m %s %P\\0' \\) -o -printf 'o %m %P\\0'" +
		" && printf -- '--\\0' && find . -name " + bundle.PyCache + " -prune -o -type f -print0 | xargs -0 -r sha256sum -z --"
}

// remoteTree is a remote directory as listScript reports it.
type remoteTree struct {
	files map[string]bundle.File
	dirs  map[string]bool
	other map[string]bool
}

// parseListing decodes listScript's output.
func parseListing(out []byte) (remoteTree, error) {
	t := remoteTree{files: map[string]bundle.File{}, dirs: map[string]bool{}, other: map[string]bool{}}
	recs := bytes.Split(out, []byte{0})
	if len(recs) > 0 && len(recs[len(recs)-1]) == 0 {
		recs = recs[:len(recs)-1]
	}
	i := 0
	for ; i < len(recs); i++ {
		r := string(recs[i])
		if r == "--" {
			break
		}
		kind, rest, ok := strings.Cut(r, " ")
		if !ok {
			return remoteTree{}, fmt.Errorf("listing record %d %q: no fields", i, r)
		}
		modeStr, rest, ok := strings.Cut(rest, " ")
		if !ok {
			return remoteTree{}, fmt.Errorf("listing record %d %q: no mode", i, r)
		}
		mode, err := strconv.ParseUint(modeStr, 8, 32)
		if err != nil || mode > 0o7777 {
			return remoteTree{}, fmt.Errorf("listing record %d %q: bad mode %q", i, r, modeStr)
		}
		switch kind {
		case "d":
			if err := checkRel(rest); err != nil {
				return remoteTree{}, fmt.Errorf("listing record %d: %w", i, err)
			}
			t.dirs[rest] = true
		case "o":
			if err := checkRel(rest); err != nil {
				return remoteTree{}, fmt.Errorf("listing record %d: %w", i, err)
			}
			t.other[rest] = true
		case "f":
			sizeStr, rel, ok := strings.Cut(rest, " ")
			if !ok {
				return remoteTree{}, fmt.Errorf("listing record %d %q: no size", i, r)
			}
			size, err := strconv.ParseInt(sizeStr, 10, 64)
			if err != nil || size < 0 {
				return remoteTree{}, fmt.Errorf("listing record %d %q: bad size %q", i, r, sizeStr)
			}
			if err := checkRel(rel); err != nil {
				return remoteTree{}, fmt.Errorf("listing record %d: %w", i, err)
			}
			t.files[rel] = bundle.File{Path: rel, Mode: fs.FileMode(mode) & fs.ModePerm, Size: size}
		default:
			return remoteTree{}, fmt.Errorf("listing record %d %q: unknown kind %q", i, r, kind)
		}
	}
	if i == len(recs) {
		return remoteTree{}, errors.New("listing: no checksum section")
	}
	for _, rec := range recs[i+1:] {
		r := string(rec)
		// "<64 hex><space><space or *>./PATH"
		if len(r) < 68 || r[64] != ' ' || (r[65] != ' ' && r[65] != '*') || r[66:68] != "./" || !isHex(r[:64]) {
			return remoteTree{}, fmt.Errorf("listing: bad checksum line %q", r)
		}
		rel := r[68:]
		f, ok := t.files[rel]
		if !ok {
			return remoteTree{}, fmt.Errorf("listing: checksum for unlisted file %q", rel)
		}
		f.Sum = r[:64]
		t.files[rel] = f
	}
	for rel, f := range t.files {
		if f.Sum == "" {
			// Listed but gone before sha256sum read it: treat as
			// absent rather than guess.
			delete(t.files, rel)
		}
	}
	return t, nil
}

// checkRel rejects paths that would escape the directory.
func checkRel(rel string) error {
	if rel == "" || path.IsAbs(rel) || path.Clean(rel) != rel || rel == ".." || strings.HasPrefix(rel, "../") {
		return fmt.Errorf("bad relative path %q", rel)
	}
	return nil
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// sftpFS is the directory root on a host as an fs.FS read over SFTP, so
// that bundle.Walk hashes a host's tree exactly as it hashes a local build.
type sftpFS struct {
	c    *sftp.Client
	root string
}

func (f sftpFS) path(op, name string) (string, error) {
	if !fs.ValidPath(name) {
		return "", &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	return path.Join(f.root, name), nil
}

// Open opens a file for reading; *sftp.File is an fs.File.
func (f sftpFS) Open(name string) (fs.File, error) {
	p, err := f.path("open", name)
	if err != nil {
		return nil, err
	}
	file, err := f.c.Open(p)
	if err != nil {
		return nil, err
	}
	return file, nil
}

// ReadDir lists a directory from one SFTP readdir (lstat information:
// a symlink is listed as a symlink, not followed).
func (f sftpFS) ReadDir(name string) ([]fs.DirEntry, error) {
	p, err := f.path("readdir", name)
	if err != nil {
		return nil, err
	}
	fis, err := f.c.ReadDir(p)
	if err != nil {
		return nil, err
	}
	out := make([]fs.DirEntry, len(fis))
	for i, fi := range fis {
		out[i] = fs.FileInfoToDirEntry(fi)
	}
	return out, nil
}

// RemoteHash is bundle.ContentHash of the directory dir on conn's host,
// read over SFTP: the truth of what a service started now would load. It
// reads every file, so it costs the tree's size in transfer; DeployedHash
// is the cheap answer.
func RemoteHash(ctx context.Context, conn Conn, dir string) (string, error) {
	host := hostOf(conn)
	c, err := openSFTP(ctx, conn)
	if err != nil {
		return "", fmt.Errorf("%s: sftp: %w", host, err)
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	fi, err := c.Stat(dir)
	if err != nil {
		return "", fmt.Errorf("%s: hash %s: %w", host, dir, err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("%s: hash %s: not a directory", host, dir)
	}
	t, err := bundle.Walk(sftpFS{c: c, root: dir})
	if err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return "", fmt.Errorf("%s: hash %s: %w", host, dir, err)
	}
	return t.Hash, nil
}

// isNotExist is true for a missing remote path.
func isNotExist(err error) bool {
	var se *sftp.StatusError
	return errors.Is(err, os.ErrNotExist) || errors.As(err, &se) && se.FxCode() == sftp.ErrSSHFxNoSuchFile
}
