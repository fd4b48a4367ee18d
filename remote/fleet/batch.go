package fleet

import (
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/event"
)

// batch is a Batch as the fold builds it, with what it counts against
// the pending budget.
type batch struct {
	remote.Batch
	text int // bytes of journal text in Events, against the pending budget
	// heldLines and heldText are what the batch the consumer has not
	// taken yet holds (the fold's ready batch), counted against the same
	// budget while this one accumulates.
	heldLines, heldText int
}

// merge is one batch of older, a batch the consumer has not taken yet,
// and newer, what came since, with the pending budget kept over the
// whole (the oldest lines go first). Its snapshot is to be taken anew.
func (f *Fleet) merge(hosts []*hostFold, snaps *snapshots, older, newer batch) batch {
	older.Hosts, older.heldLines, older.heldText = nil, 0, 0
	older.Events = append(older.Events, newer.Events...)
	older.Changes = append(older.Changes, newer.Changes...)
	older.Dropped += newer.Dropped
	older.text += newer.text
	f.trim(hosts, snaps, &older)
	return older
}

// trim drops b's oldest journal lines while it holds, with what the
// batch not yet taken holds, more than the pending budget allows
// (Options.MaxPendingLines lines, the log budget's pending share of
// text), counting each against b and its host.
func (f *Fleet) trim(hosts []*hostFold, snaps *snapshots, b *batch) {
	n := len(b.Events) + b.heldLines - f.opts.MaxPendingLines
	over := b.text + b.heldText - f.opts.LogBudget/remote.PendingShare
	if n <= 0 && over <= 0 {
		return
	}
	b.Events = dropJournal(b.Events, n, over, func(host string, size int) {
		b.Dropped++
		b.text -= size
		if j, ok := f.byName[host]; ok {
			hosts[j].state.Dropped++
			snaps.mark(j, hosts[j])
		}
	})
}

// dropJournal removes the oldest journal events (never state changes):
// at least n of them, and enough to free over bytes of text, telling
// counted which host lost each and its size.
func dropJournal(evs []event.Event, n, over int, counted func(host string, size int)) []event.Event {
	out := evs[:0]
	for _, ev := range evs {
		if (n > 0 || over > 0) && ev.Kind == event.KindJournal {
			size := 0
			if ev.Journal != nil {
				size = len(ev.Journal.Message)
			}
			n, over = n-1, over-size
			counted(ev.Host, size)
			continue
		}
		out = append(out, ev)
	}
	return out
}
