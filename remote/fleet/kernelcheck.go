package fleet

import (
	"strings"

	"github.com/bringup-dev/bringup/remote"
)

// noteLoadedKernel keeps, from a journal line of h, the content hash of
// the kernel build its service loaded (the "sitecustomize loaded" line),
// per kernel: what the drift badge compares with the local build
// (Options.LocalHashes). The cheap look for the line's words comes first:
// every journal line passes here.
func (h *hostFold) noteLoadedKernel(msg string) {
	if !strings.Contains(msg, "sitecustomize loaded from") {
		return
	}
	l, ok := remote.ParseLoadedKernel(msg)
	if !ok {
		return
	}
	if h.state.KernelHashes == nil {
		h.state.KernelHashes = map[string]string{}
	}
	h.state.KernelHashes[l.Kernel] = l.Hash
}
