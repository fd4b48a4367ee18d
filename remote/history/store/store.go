// Package store is the startup history's file: one JSON line per record
// in $XDG_STATE_HOME/bringup/history.jsonl, read once at start and
// appended to as startups reach serving, and the Sink that connects it to
// the fleet. It is the only part of the history that does IO; the records
// and what they predict (history.Estimate, history.ETA) are pure.
package store

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/bringup-dev/bringup/remote/history"
)

// MaxPerKey is how many records a Store keeps in memory for each host,
// unit and modes; older ones stay in the file but are not read back.
const MaxPerKey = 200

// maxProblems bounds the corrupt-line errors a Store keeps to show.
const maxProblems = 10

// DefaultPath is $XDG_STATE_HOME/bringup/history.jsonl, or
// ~/.local/state/bringup/history.jsonl when XDG_STATE_HOME is unset or not
// absolute (as the XDG spec says to ignore relative paths). getenv is
// os.Getenv in production; it is a parameter so tests need no environment.
func DefaultPath(getenv func(string) string) (string, error) {
	if d := getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "bringup", "history.jsonl"), nil
	}
	home := getenv("HOME")
	if home == "" {
		return "", errors.New("history path: neither XDG_STATE_HOME nor HOME is set")
	}
	return filepath.Join(home, ".local", "state", "bringup", "history.jsonl"), nil
}

type storeKey struct{ host, unit, modes, kind string }

// Store is the history file and the records read from it. It is safe for
// concurrent use; Records and Expect never wait for file IO.
type Store struct {
	path   string
	memory bool // NewMemoryStore: Append writes no file

	wmu sync.Mutex // serialises appends to the file

	mu       sync.Mutex // guards the fields below
	recs     map[storeKey][]history.Record
	skipped  int
	problems []error
	gen      uint64 // bumps on every change of recs
}

// Open reads the records in path (a missing file is an empty history). A
// line that does not decode is skipped and counted (see Skipped and
// Problems, whose errors name path:line); only a file that cannot be read
// is an error.
func Open(path string) (*Store, error) {
	s := &Store{path: path, recs: map[storeKey][]history.Record{}}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open history: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 4<<20)
	line := 0
	for sc.Scan() {
		line++
		b := sc.Bytes()
		if len(b) == 0 {
			continue
		}
		var r history.Record
		if err := json.Unmarshal(b, &r); err != nil {
			s.problem(fmt.Errorf("%s:%d: %w", path, line, err))
			continue
		}
		if r.Host == "" || r.Unit == "" {
			s.problem(fmt.Errorf("%s:%d: record without host or unit", path, line))
			continue
		}
		s.add(r)
	}
	switch err := sc.Err(); {
	case errors.Is(err, bufio.ErrTooLong):
		// A line longer than any record ends the scan; what came before
		// it is still good history.
		s.problem(fmt.Errorf("%s:%d: %w", path, line+1, err))
	case err != nil:
		return nil, fmt.Errorf("read history %s:%d: %w", path, line+1, err)
	}
	return s, nil
}

// NewMemoryStore returns a store that holds records (kept per key as Open
// keeps a file's lines) and whose Append keeps new records in memory and
// writes no file: a history for a simulated fleet, which must leave the
// user's real history alone. Its Path is empty.
func NewMemoryStore(records []history.Record) *Store {
	s := &Store{memory: true, recs: map[storeKey][]history.Record{}}
	for _, r := range records {
		s.add(r)
	}
	return s
}

func (s *Store) problem(err error) {
	s.skipped++
	if len(s.problems) < maxProblems {
		s.problems = append(s.problems, err)
	}
}

// add keeps r in memory, dropping the oldest record of its key beyond
// MaxPerKey. The caller holds mu or owns s exclusively.
func (s *Store) add(r history.Record) {
	// Throughput records are kept apart, so that they take no room from
	// the startups the ETAs come from.
	k := storeKey{r.Host, r.Unit, history.ModesKey(r.Modes), r.Kind}
	l := append(s.recs[k], r)
	if n := len(l) - MaxPerKey; n > 0 {
		l = append(l[:0], l[n:]...)
	}
	s.recs[k] = l
	s.gen++
}

// Path is the file the store reads and appends to; empty for a memory store.
func (s *Store) Path() string { return s.path }

// Skipped is how many lines of the file could not be read.
func (s *Store) Skipped() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.skipped
}

// Problems are the errors of the first skipped lines, each naming path:line.
func (s *Store) Problems() []error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]error(nil), s.problems...)
}

// Append writes r as one line at the end of the file and syncs it, creating
// the directory (0700) and the file (0600) when needed, then keeps it in
// memory. A memory store only keeps it.
func (s *Store) Append(r history.Record) error {
	if s.memory {
		s.mu.Lock()
		s.add(r)
		s.mu.Unlock()
		return nil
	}
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("history record for %s: %w", r.Host, err)
	}
	b = append(b, '\n')
	if err := s.write(b); err != nil {
		return fmt.Errorf("history record for %s: %w", r.Host, err)
	}
	s.mu.Lock()
	s.add(r)
	s.mu.Unlock()
	return nil
}

func (s *Store) write(line []byte) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if err := os.MkdirAll(filepath.Dir(s.path), 0o700); err != nil {
		return fmt.Errorf("create history dir: %w", err)
	}
	f, err := os.OpenFile(s.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("open history: %w", err)
	}
	if _, err := f.Write(line); err != nil {
		f.Close()
		return fmt.Errorf("append to %s: %w", s.path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("sync %s: %w", s.path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", s.path, err)
	}
	return nil
}

// Records returns a copy of the startup records in memory for unit and
// modes, on every host, oldest first within each host.
func (s *Store) Records(unit string, modes map[string]string) []history.Record {
	key := history.ModesKey(modes)
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []history.Record
	for k, l := range s.recs {
		if k.unit == unit && k.modes == key && k.kind == "" {
			out = append(out, l...)
		}
	}
	return out
}

// Throughput returns a copy of host's throughput and bench records for
// unit, under every kernel configuration.
func (s *Store) Throughput(host, unit string) []history.Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []history.Record
	for k, l := range s.recs {
		if k.host == host && k.unit == unit && (k.kind == history.KindThroughput || k.kind == history.KindBench) {
			out = append(out, l...)
		}
	}
	return out
}

// generation changes whenever the records in memory change.
func (s *Store) generation() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gen
}
