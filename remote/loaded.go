package remote

import "strings"

// LoadedKernel is what a service's kernel line says it loaded: infersim (and a
// kernel's sitecustomize.py that follows the same convention) logs
// "<kernel>: sitecustomize loaded from <dir>, mode=<mode>, content sha256=<hex>"
// once per start.
type LoadedKernel struct {
	Kernel string
	Dir    string
	Mode   string
	Hash   string
}

// ParseLoadedKernel reads a kernel line from a service's log (any prefix, such
// as SGLang's "[2025-01-02 03:04:05] ", is skipped). The hash is what the
// fleet compares with bundle.ContentHash of the local build.
func ParseLoadedKernel(line string) (LoadedKernel, bool) {
	const (
		from = ": sitecustomize loaded from "
		mode = ", mode="
		sum  = ", content sha256="
	)
	head, rest, ok := strings.Cut(line, from)
	if !ok {
		return LoadedKernel{}, false
	}
	dir, rest, ok := strings.Cut(rest, mode)
	if !ok {
		return LoadedKernel{}, false
	}
	m, hash, ok := strings.Cut(rest, sum)
	hash = strings.TrimSpace(hash)
	if !ok || len(hash) != 64 || strings.Trim(hash, "0123456789abcdef") != "" {
		return LoadedKernel{}, false
	}
	kernel := head[strings.LastIndexAny(head, " ]")+1:]
	if kernel == "" || dir == "" {
		return LoadedKernel{}, false
	}
	return LoadedKernel{Kernel: kernel, Dir: dir, Mode: m, Hash: hash}, true
}
