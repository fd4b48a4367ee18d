package scalerig

import (
	"context"
	"slices"
	"time"
)

// insertChunk is how many entries one insert request carries.
const insertChunk = 5000

// All is every host's entries in time order.
func All(hosts []Host) []Entry {
	var out []Entry
	for _, h := range hosts {
		out = append(out, h.Entries...)
	}
	slices.SortStableFunc(out, func(a, b Entry) int { return a.Time.Compare(b.Time) })
	return out
}

// Backlog inserts entries at once, in chunks, and flushes: the store then
// holds the hosts' startups as history.
func Backlog(ctx context.Context, s *Store, entries []Entry) error {
	for i := 0; i < len(entries); i += insertChunk {
		if err := s.Insert(ctx, entries[i:min(i+insertChunk, len(entries))]); err != nil {
			return err
		}
	}
	return s.Flush(ctx)
}

// Live inserts entries (in time order) as their time comes, every tick,
// as an uploader following each host's journal would, until they are all
// in or ctx ends. now is the clock the entries' times are on.
func Live(ctx context.Context, s *Store, entries []Entry, tick time.Duration, now func() time.Time) error {
	t := time.NewTicker(tick)
	defer t.Stop()
	for len(entries) > 0 {
		n, _ := slices.BinarySearchFunc(entries, now(), func(e Entry, t time.Time) int {
			if e.Time.After(t) {
				return 1
			}
			return -1
		})
		for n > 0 {
			k := min(n, insertChunk)
			if err := s.Insert(ctx, entries[:k]); err != nil {
				return err
			}
			entries, n = entries[k:], n-k
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}
