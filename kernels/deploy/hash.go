package deploy

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
)

// ContentHash is the content hash of the tree rooted at fsys's ".", in hex:
// sha256 over the tree's regular files in walk order (fs.WalkDir: each
// directory's entries sorted by name, depth first), each written as its
// slash path relative to the root, a NUL, its length in decimal, a NUL
// and its content. Directories, symlinks and other non-regular entries add
// nothing, and modes are not hashed.
//
// It is the hash infersim prints ("content sha256=…") for the directory
// it finds first on PYTHONPATH (dirHash in cmd/infersim/config.go), so a
// local build's hash can be compared with the one a service logs. Note the
// walk order is not the order of sorted full paths: "a/b" comes before
// "a.txt" because the directory "a" sorts before the name "a.txt".
func ContentHash(fsys fs.FS) (string, error) {
	t, err := walkTree(fsTree{fsys})
	if err != nil {
		return "", err
	}
	return t.hash, nil
}

// DirHash is ContentHash of the local directory dir.
func DirHash(dir string) (string, error) {
	h, err := ContentHash(os.DirFS(dir))
	if err != nil {
		return "", fmt.Errorf("hash %s: %w", dir, err)
	}
	return h, nil
}

// entry is one directory entry as a tree source reports it.
type entry struct {
	name string
	mode fs.FileMode // type bits and permissions
	size int64
}

// treeSource is a tree the walker can read: the local file system or a
// host over SFTP. Paths are slash paths relative to the root ("" is the
// root itself).
type treeSource interface {
	readDir(rel string) ([]entry, error)
	open(rel string) (io.ReadCloser, error)
}

// file is one regular file of a tree.
type file struct {
	rel  string
	mode fs.FileMode // permission bits only
	size int64
	sum  string // sha256 of the content, hex
}

// pyCache is the directory of Python's byte-code caches, left out of the
// tree everywhere (hash, plan, deletions).
const pyCache = "__pycache__"

// tree is a walked tree: its regular files in walk order, its directories
// (without the root) and its content hash.
type tree struct {
	files []file
	dirs  []string
	// other are entries that are neither regular files nor directories
	// (symlinks, sockets): the hash skips them, as infersim does.
	other []string
	hash  string
	bytes int64
}

// walkTree reads every regular file of src once, computing each file's
// sha256 and the tree's content hash together.
func walkTree(src treeSource) (tree, error) {
	var t tree
	th := sha256.New()
	var walk func(dir string) error
	walk = func(dir string) error {
		ents, err := src.readDir(dir)
		if err != nil {
			return err
		}
		sort.Slice(ents, func(i, j int) bool { return ents[i].name < ents[j].name })
		for _, e := range ents {
			if e.name == "" || e.name == "." || e.name == ".." || strings.Contains(e.name, "/") {
				return fmt.Errorf("%s: bad directory entry %q", dir, e.name)
			}
			rel := path.Join(dir, e.name)
			switch {
			case e.mode.IsDir() && e.name == pyCache:
				// Python writes its byte-code caches into a writable
				// PYTHONPATH directory at the first import: they are not
				// part of the build, and counting them would show every
				// host drifting after its first start.
			case e.mode.IsDir():
				t.dirs = append(t.dirs, rel)
				if err := walk(rel); err != nil {
					return err
				}
			case e.mode.IsRegular():
				sum, err := hashFile(src, rel, e.size, th)
				if err != nil {
					return err
				}
				t.files = append(t.files, file{rel: rel, mode: e.mode.Perm(), size: e.size, sum: sum})
				t.bytes += e.size
			default:
				t.other = append(t.other, rel)
			}
		}
		return nil
	}
	if err := walk(""); err != nil {
		return tree{}, err
	}
	t.hash = hex.EncodeToString(th.Sum(nil))
	return t, nil
}

// hashFile streams rel into the tree hash th (after its header) and
// returns its own sha256. The header needs the length before the content,
// so a file that changes size while it is read is an error rather than a
// wrong hash.
func hashFile(src treeSource, rel string, size int64, th hash.Hash) (string, error) {
	r, err := src.open(rel)
	if err != nil {
		return "", err
	}
	defer r.Close()
	fmt.Fprintf(th, "%s\x00%d\x00", rel, size)
	fh := sha256.New()
	n, err := io.Copy(io.MultiWriter(th, fh), io.LimitReader(r, size+1))
	if err != nil {
		return "", fmt.Errorf("read %s: %w", rel, err)
	}
	if n != size {
		return "", fmt.Errorf("read %s: %d bytes, want %d (changed while hashing)", rel, n, size)
	}
	return hex.EncodeToString(fh.Sum(nil)), nil
}

// fsTree reads a tree from an fs.FS.
type fsTree struct{ fsys fs.FS }

func (t fsTree) name(rel string) string {
	if rel == "" {
		return "."
	}
	return rel
}

func (t fsTree) readDir(rel string) ([]entry, error) {
	des, err := fs.ReadDir(t.fsys, t.name(rel))
	if err != nil {
		return nil, err
	}
	out := make([]entry, 0, len(des))
	for _, d := range des {
		e := entry{name: d.Name(), mode: d.Type()}
		if d.Type().IsRegular() || d.IsDir() {
			fi, err := d.Info()
			if err != nil {
				return nil, err
			}
			e.mode, e.size = fi.Mode(), fi.Size()
		}
		out = append(out, e)
	}
	return out, nil
}

func (t fsTree) open(rel string) (io.ReadCloser, error) { return t.fsys.Open(t.name(rel)) }
