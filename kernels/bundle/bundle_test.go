package bundle

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"slices"
	"testing"
	"testing/fstest"
)

// TestContentHashDefinition pins the hash to infersim's definition: walk
// order (the directory "a" before the file "a.txt", unlike sorted full
// paths), "path NUL length NUL content" per regular file, nothing for
// directories or modes.
func TestContentHashDefinition(t *testing.T) {
	fsys := fstest.MapFS{
		"a.txt":       {Data: []byte("x"), Mode: 0o600},
		"a/b":         {Data: []byte("yy")},
		"a/c/d.py":    {Data: []byte("")},
		"empty":       {Mode: os.ModeDir | 0o755},
		"link-to-a.t": {Data: []byte("a.txt"), Mode: os.ModeSymlink},
	}
	got, err := ContentHash(fsys)
	if err != nil {
		t.Fatal(err)
	}
	want := sha256.Sum256([]byte("a/b\x002\x00yy" + "a/c/d.py\x000\x00" + "a.txt\x001\x00x"))
	if got != hex.EncodeToString(want[:]) {
		t.Fatalf("ContentHash = %s, want %x", got, want)
	}
	// Python's byte-code caches are not part of the build.
	fsys["__pycache__/sitecustomize.cpython-312.pyc"] = &fstest.MapFile{Data: []byte("bytecode")}
	fsys["a/__pycache__/x.pyc"] = &fstest.MapFile{Data: []byte("bytecode")}
	if again, err := ContentHash(fsys); err != nil || again != got {
		t.Fatalf("with __pycache__: %s, %v; want %s", again, err, got)
	}
	empty := sha256.Sum256(nil)
	if got, err := ContentHash(fstest.MapFS{}); err != nil || got != hex.EncodeToString(empty[:]) {
		t.Fatalf("empty tree: %s, %v", got, err)
	}
}

// TestWalkListsTheTree checks what a deploy plans from: the regular files
// in walk order with their modes, sizes and sums, the directories, and the
// entries that are neither (left out of the hash, refused by a deploy).
func TestWalkListsTheTree(t *testing.T) {
	fsys := fstest.MapFS{
		"a.txt":          {Data: []byte("x"), Mode: 0o600},
		"a/b":            {Data: []byte("yy"), Mode: 0o755},
		"a/__pycache__/": {Mode: os.ModeDir | 0o755},
		"ln":             {Data: []byte("a.txt"), Mode: os.ModeSymlink},
	}
	tr, err := Walk(fsys)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, f := range tr.Files {
		paths = append(paths, f.Path)
	}
	if !slices.Equal(paths, []string{"a/b", "a.txt"}) {
		t.Fatalf("files %v, want walk order [a/b a.txt]", paths)
	}
	yy := sha256.Sum256([]byte("yy"))
	if f := tr.Files[0]; f.Mode != 0o755 || f.Size != 2 || f.Sum != hex.EncodeToString(yy[:]) {
		t.Errorf("a/b: %+v", f)
	}
	if !slices.Equal(tr.Dirs, []string{"a"}) || !slices.Equal(tr.Other, []string{"ln"}) || tr.Bytes != 3 {
		t.Errorf("dirs %v, other %v, bytes %d", tr.Dirs, tr.Other, tr.Bytes)
	}
	if h, _ := ContentHash(fsys); h != tr.Hash {
		t.Errorf("Walk's hash %s, ContentHash %s", tr.Hash, h)
	}
}
