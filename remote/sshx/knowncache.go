package sshx

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"
)

// KnownHostsCache shares one reading of the known_hosts files between the
// dials of a fleet. ssh reads them at every connection; a fleet of N hosts
// that did the same would parse N lines N times at its start (at 256 hosts
// that was 15 % of the client's CPU samples before its table was full, and
// 236 kB of garbage a dial: BenchmarkKnownHostsPerDial). A reading is
// reused while every file is as it was read: same existence, size,
// modification and change times and inode, so a key
// appended (accept-new, doctor --trust) or a file replaced by an editor is
// read again at the next dial, as ssh would. Safe for concurrent dials.
type KnownHostsCache struct {
	mu      sync.Mutex
	entries map[string]knownHostsEntry // by the files' list
}

type knownHostsEntry struct {
	stamps []fileStamp
	kh     *KnownHosts
}

// fileStamp is what a known_hosts file looked like when it was read.
type fileStamp struct {
	exists       bool
	size         int64
	mtime, ctime time.Time
	ino          uint64
}

// NewKnownHostsCache returns an empty cache.
func NewKnownHostsCache() *KnownHostsCache {
	return &KnownHostsCache{entries: map[string]knownHostsEntry{}}
}

// Load is LoadKnownHosts, answered from the cache while the files are
// unchanged. A nil cache loads every time.
func (c *KnownHostsCache) Load(userFiles, globalFiles []string) (*KnownHosts, error) {
	if c == nil {
		return LoadKnownHosts(userFiles, globalFiles)
	}
	key := strings.Join(userFiles, "\x00") + "\x01" + strings.Join(globalFiles, "\x00")
	files := append(append([]string{}, userFiles...), globalFiles...)
	c.mu.Lock()
	defer c.mu.Unlock()
	stamps, err := stampFiles(files)
	if err != nil {
		return nil, err
	}
	if e, ok := c.entries[key]; ok && sameStamps(e.stamps, stamps) {
		return e.kh, nil
	}
	kh, err := LoadKnownHosts(userFiles, globalFiles)
	if err != nil {
		return nil, err
	}
	// Stamped before reading: a file changed while it was read has a
	// newer stamp at the next dial, which reads it again.
	c.entries[key] = knownHostsEntry{stamps: stamps, kh: kh}
	return kh, nil
}

func stampFiles(files []string) ([]fileStamp, error) {
	out := make([]fileStamp, len(files))
	for i, f := range files {
		fi, err := os.Stat(f)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("known_hosts %s: %w", f, err)
		}
		s := fileStamp{exists: true, size: fi.Size(), mtime: fi.ModTime()}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			s.ctime = time.Unix(st.Ctim.Sec, st.Ctim.Nsec)
			s.ino = st.Ino
		}
		out[i] = s
	}
	return out, nil
}

func sameStamps(a, b []fileStamp) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].exists != b[i].exists || a[i].size != b[i].size || !a[i].mtime.Equal(b[i].mtime) ||
			!a[i].ctime.Equal(b[i].ctime) || a[i].ino != b[i].ino {
			return false
		}
	}
	return true
}
