package fleet

import (
	"maps"
	"strings"
	"time"

	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/startup"
)

// KernelCheck is the Observer that keeps, per host, the content hash of
// the kernel build its service loaded (the "sitecustomize loaded" line),
// per kernel: the snapshot's KernelHashes, what the drift badge compares
// with the local build (Options.LocalHashes).
func KernelCheck() Observer { return kernelCheck{} }

type kernelCheck struct{}

func (kernelCheck) Follow(Folded) HostObserver { return &hostKernels{} }

// hostKernels is the kernel builds one host's service loaded, by kernel.
type hostKernels struct{ hashes map[string]string }

// Observe notes the hash from a journal line that names one. The cheap
// look for the line's words comes first: every journal line passes here.
func (k *hostKernels) Observe(_ Folded, ev event.Event, _ []startup.Change) {
	if ev.Kind != event.KindJournal || ev.Journal == nil || !strings.Contains(ev.Journal.Message, "sitecustomize loaded from") {
		return
	}
	l, ok := remote.ParseLoadedKernel(ev.Journal.Message)
	if !ok {
		return
	}
	if k.hashes == nil {
		k.hashes = map[string]string{}
	}
	k.hashes[l.Kernel] = l.Hash
}

// Derive gives s a copy of the hashes (the snapshot goes to another
// goroutine).
func (k *hostKernels) Derive(s *remote.HostState, _ time.Time) bool {
	s.KernelHashes = maps.Clone(k.hashes)
	return false
}
