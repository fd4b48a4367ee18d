package deploy

import "strings"

// Loaded is what a service's kernel line says it loaded: infersim (and a
// kernel's sitecustomize.py that follows the same convention) logs
// "<kernel>: sitecustomize loaded from <dir>, mode=<mode>, content sha256=<hex>"
// once per start.
type Loaded struct {
	Kernel string
	Dir    string
	Mode   string
	Hash   string
}

// ParseLoaded reads a kernel line from a service's log (any prefix, such
// as SGLang's "[2025-01-02 03:04:05] ", is skipped). The hash is what the
// fleet compares with ContentHash of the local build.
func ParseLoaded(line string) (Loaded, bool) {
	const (
		from = ": sitecustomize loaded from "
		mode = ", mode="
		sum  = ", content sha256="
	)
	head, rest, ok := strings.Cut(line, from)
	if !ok {
		return Loaded{}, false
	}
	dir, rest, ok := strings.Cut(rest, mode)
	if !ok {
		return Loaded{}, false
	}
	m, hash, ok := strings.Cut(rest, sum)
	hash = strings.TrimSpace(hash)
	if !ok || len(hash) != 64 || !isHex(hash) {
		return Loaded{}, false
	}
	kernel := head[strings.LastIndexAny(head, " ]")+1:]
	if kernel == "" || dir == "" {
		return Loaded{}, false
	}
	return Loaded{Kernel: kernel, Dir: dir, Mode: m, Hash: hash}, true
}
