package capturelint

import (
	"fmt"
	"io/fs"
	"path"
	"strings"
)

// Limits on the tree ReadTree reads: a kernel is a few files, not a
// checkout of the world.
const (
	MaxFiles    = 20000
	MaxFileSize = 4 << 20
)

// ReadTree reads the Python files under fsys's root: every *.py, outside
// hidden directories and __pycache__, in walk order. A file over
// MaxFileSize is left out and named in skipped.
func ReadTree(fsys fs.FS) (files []File, skipped []string, err error) {
	err = fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && p != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "__pycache__"):
			return fs.SkipDir
		case d.IsDir() || !d.Type().IsRegular() || path.Ext(p) != ".py":
			return nil
		case len(files) >= MaxFiles:
			return fmt.Errorf("more than %d Python files: is this the kernel's tree?", MaxFiles)
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if info.Size() > MaxFileSize {
			skipped = append(skipped, p)
			return nil
		}
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		files = append(files, File{Path: p, Src: string(b)})
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("read the kernel's tree: %w", err)
	}
	return files, skipped, nil
}
