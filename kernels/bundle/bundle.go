// Package bundle hashes a kernel's build tree: the local build a redeploy
// sends, and (through any fs.FS, such as a host's directory read over
// SFTP) the tree a host has. The content hash is the one infersim logs
// for the directory it loads, so a build and a running service can be
// compared. It reads files and nothing else: sending a bundle to a host is
// remote/deploy's job.
package bundle

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

	"github.com/bringup-dev/bringup/kernels"
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
	t, err := Walk(fsys)
	if err != nil {
		return "", err
	}
	return t.Hash, nil
}

// DirHash is ContentHash of the local directory dir.
func DirHash(dir string) (string, error) {
	h, err := ContentHash(os.DirFS(dir))
	if err != nil {
		return "", fmt.Errorf("hash %s: %w", dir, err)
	}
	return h, nil
}

// entry is one directory entry as the walker sees it.
type entry struct {
	name string
	mode fs.FileMode // type bits and permissions
	size int64
}

// File is one regular file of a tree.
type File struct {
	Path string      // slash path relative to the root
	Mode fs.FileMode // permission bits only
	Size int64
	Sum  string // sha256 of the content, hex
}

// PyCache is the directory of Python's byte-code caches, left out of the
// tree everywhere (hash, deploy plan, deletions).
const PyCache = "__pycache__"

// Tree is a walked tree: its regular files in walk order, its directories
// (without the root) and its content hash.
type Tree struct {
	Files []File
	Dirs  []string
	// Other are entries that are neither regular files nor directories
	// (symlinks, sockets): the hash skips them, as infersim does.
	Other []string
	Hash  string // ContentHash
	Bytes int64  // the files' sizes added up
}

// Walk reads every regular file of the tree rooted at fsys's "." once,
// computing each file's sha256 and the tree's content hash (ContentHash)
// together.
func Walk(fsys fs.FS) (Tree, error) {
	src := fsTree{fsys}
	var t Tree
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
			case e.mode.IsDir() && e.name == PyCache:
				// Python writes its byte-code caches into a writable
				// PYTHONPATH directory at the first import: they are not
				// part of the build, and counting them would show every
				// host drifting after its first start.
			case e.mode.IsDir():
				t.Dirs = append(t.Dirs, rel)
				if err := walk(rel); err != nil {
					return err
				}
			case e.mode.IsRegular():
				sum, err := hashFile(src, rel, e.size, th)
				if err != nil {
					return err
				}
				t.Files = append(t.Files, File{Path: rel, Mode: e.mode.Perm(), Size: e.size, Sum: sum})
				t.Bytes += e.size
			default:
				t.Other = append(t.Other, rel)
			}
		}
		return nil
	}
	if err := walk(""); err != nil {
		return Tree{}, err
	}
	t.Hash = hex.EncodeToString(th.Sum(nil))
	return t, nil
}

// hashFile streams rel into the tree hash th (after its header) and
// returns its own sha256. The header needs the length before the content,
// so a file that changes size while it is read is an error rather than a
// wrong hash.
func hashFile(src fsTree, rel string, size int64, th hash.Hash) (string, error) {
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

// LocalHashes hashes the local build (LocalDir) of each kernel of cat that
// has a readable one: what the hosts should be running, for the drift
// badge. A kernel without a readable build has no entry (no badge).
func LocalHashes(cat kernels.Catalog) map[string]string {
	out := map[string]string{}
	for _, k := range cat.Kernels {
		if k.LocalDir == "" {
			continue
		}
		if h, err := DirHash(k.LocalDir); err == nil {
			out[k.Name] = h
		}
	}
	return out
}
