package store

import (
	"fmt"
	"sync"

	"github.com/bringup-dev/bringup/remote/history"
)

// Sink connects a Store to the fleet: Expect answers from memory (with a
// cache, so the fold loop pays for a computation only after the history
// changed) and Record appends to the file. It satisfies fleet.HistoryStore.
type Sink struct {
	store *Store

	mu    sync.Mutex // guards cache and gen
	cache map[expectKey]history.Expectation
	gen   uint64
}

type expectKey struct{ host, unit, modes string }

// NewSink returns a sink over store.
func NewSink(store *Store) *Sink {
	return &Sink{store: store, cache: map[expectKey]history.Expectation{}}
}

// Expect is the expectation for host, unit and modes; ok is false when
// there is no history for them on any host. It does no IO.
func (k *Sink) Expect(host, unit string, modes map[string]string) (history.Expectation, bool) {
	key := expectKey{host, unit, history.ModesKey(modes)}
	gen := k.store.generation()
	k.mu.Lock()
	defer k.mu.Unlock()
	if gen != k.gen {
		clear(k.cache)
		k.gen = gen
	}
	e, hit := k.cache[key]
	if !hit {
		e = history.Estimate(k.store.Records(unit, modes), host, unit, modes)
		k.cache[key] = e
	}
	return e, e.Known()
}

// Compare sets the decode rate of host's unit under modes (live: the
// current run's steady rate, 0 when none yet) against the configuration it
// ran before (history.Compare). It does no IO.
func (k *Sink) Compare(host, unit string, modes map[string]string, live, slowerBy float64) history.ModeAB {
	return history.Compare(k.store.Throughput(host, unit), host, unit, modes, live, slowerBy)
}

// Record appends r to the history (the file, or memory for a memory store).
func (k *Sink) Record(r history.Record) error { return k.store.Append(r) }

// OpenSink opens the history at path for a fleet: "" is DefaultPath, "off"
// is none (nil). warning says how many unreadable lines were skipped.
func OpenSink(path string, getenv func(string) string) (sink *Sink, warning string, err error) {
	if path == "off" {
		return nil, "", nil
	}
	if path == "" {
		if path, err = DefaultPath(getenv); err != nil {
			return nil, "", err
		}
	}
	s, err := Open(path)
	if err != nil {
		return nil, "", err
	}
	if n := s.Skipped(); n > 0 {
		warning = fmt.Sprintf("%d unreadable lines in %s skipped (first: %v)", n, path, s.Problems()[0])
	}
	return NewSink(s), warning, nil
}
