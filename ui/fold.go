package ui

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/bringup-dev/bringup/remote/startup"
)

// Rank folding. With tensor (and data, expert, pipeline) parallelism every
// rank prints the same line: eight "Load weight begin" lines a host, eight
// tracebacks' first lines. The log pane shows them as one row, the first
// rank's line with its rank numbers widened to the ranks that printed it
// and the count at the end:
//
//	[2026-11-30 10:04:42 TP0-7] Load weight begin. avail mem=75.20 GB ×8
//
// Lines fold when each carries a rank tag (startup.ParseRankTag), no two
// come from the same process, they are the same line once every number is
// blanked (startup.SameBlanked: the rank numbers, time stamps and the
// figures ranks differ in, such as free memory), they are of one kind,
// and the later ones come at most foldWindow lines after the first.
// Anything else, including the main process's untagged lines, stays as it
// is. When the ranks' figures differ the row says so, and unfolding (z)
// shows each rank's line.

// foldWindow is how many lines after a group's first line a rank's copy
// may come and still join it. Ranks run in lock step but print at their
// own pace, so their copies interleave with one another's other lines; in
// the corpus's real multi-rank logs every copy that folds comes within 14
// lines of the first. It also bounds the work: a run of folded lines is at
// most foldWindow long, so stepping over the rows on screen costs
// O(screen × foldWindow) whatever the history.
const foldWindow = 64

// foldGroup is one row standing for the same line of several ranks.
type foldGroup struct {
	members []int             // sequence numbers, the first line (the row's) first
	ids     []string          // the members' rank tags' IDs: a rank joins once
	vals    [][]int           // per rank number of the first line's tags, every value the members print, sorted
	nums    []startup.RankNum // the first line's rank numbers, where to write vals
	varies  bool              // a member's message differs from the first's (in its numbers)
}

// foldIndex folds one ring's lines, incrementally: each line is looked at
// once, when it arrives (sync), and lines leaving the ring leave the index.
// Drawing asks only about the lines it draws.
type foldIndex struct {
	base   int                // sequence number of lead[0]
	lead   []int32            // per line from base: 0 it is a row, k > 0 it is folded into the group whose first line is k before it
	next   int                // the next sequence number to look at
	held   int                // the oldest sequence number that is a line of the host's (not the budget's marker)
	groups map[int]*foldGroup // by the sequence number of their first line; groups of one are not kept
	open   map[uint64]int     // a blanked line's hash → the first line of its newest group
	swept  int                // where open was last cleared of groups too old to join
	hidden int                // lines folded into another's row now
}

func newFoldIndex(r *ring) *foldIndex {
	f := &foldIndex{}
	f.reset(r)
	f.sync(r)
	return f
}

// reset empties the index, to start again at the oldest line r holds.
func (f *foldIndex) reset(r *ring) {
	*f = foldIndex{base: r.first(), next: r.first(), held: heldFrom(r), groups: map[int]*foldGroup{}, open: map[uint64]int{}}
	f.swept = f.next
}

// heldFrom is the oldest sequence number of a real line in r: the budget's
// marker takes the place (and number) of a line it dropped.
func heldFrom(r *ring) int {
	if r.marked {
		return r.first() + 1
	}
	return r.first()
}

// sync brings the index up to r: it lets go of the lines r dropped and
// looks at the lines it gained. O(lines changed).
func (f *foldIndex) sync(r *ring) {
	if f.next < r.first() {
		f.reset(r) // lines came and went unseen: look at what is held
	}
	if held := heldFrom(r); held > f.held {
		f.drop(held)
	}
	for ; f.next < r.total; f.next++ {
		f.add(r, f.next)
	}
	if f.next-f.swept >= foldWindow {
		for k, head := range f.open {
			if f.next-head > foldWindow || head < f.held {
				delete(f.open, k)
			}
		}
		f.swept = f.next
	}
}

// drop forgets the lines before held, keeping the count of folded lines
// right: a dropped folded line was hidden; the members of a dropped first
// line that stay become rows of their own.
func (f *foldIndex) drop(held int) {
	for seq := f.held; seq < held && seq < f.next; seq++ {
		if f.headOf(seq) != seq {
			f.hidden--
		}
		if g := f.groups[seq]; g != nil {
			for _, m := range g.members[1:] {
				if m >= held {
					f.hidden--
				}
			}
			delete(f.groups, seq)
		}
	}
	f.held = held
	if held > f.base {
		cut := min(held, f.next) - f.base
		f.lead = f.lead[cut:]
		f.base += cut
	}
}

// add looks at line seq: it joins the newest group of the same line, or
// starts one.
func (f *foldIndex) add(r *ring, seq int) {
	f.lead = append(f.lead, 0)
	l := r.at(seq)
	if l.Kind != lineJournal && l.Kind != lineErr {
		return
	}
	tag, ok := startup.ParseRankTag(l.Text)
	if !ok {
		return
	}
	h := startup.BlankedHash(l.Text)
	if head, ok := f.open[h]; ok && seq-head <= foldWindow && head >= f.held {
		first := r.at(head)
		g := f.groups[head]
		if g == nil {
			ft, _ := startup.ParseRankTag(first.Text)
			g = &foldGroup{members: []int{head}, ids: []string{ft.ID}, nums: ft.Nums}
			for _, n := range ft.Nums {
				g.vals = append(g.vals, []int{n.Value})
			}
		}
		if first.Kind == l.Kind && !slices.Contains(g.ids, tag.ID) && len(tag.Nums) == len(g.nums) &&
			startup.SameBlanked(first.Text, l.Text) {
			g.members = append(g.members, seq)
			g.ids = append(g.ids, tag.ID)
			for i, n := range tag.Nums {
				if j, found := slices.BinarySearch(g.vals[i], n.Value); !found {
					g.vals[i] = slices.Insert(g.vals[i], j, n.Value)
				}
			}
			if !g.varies && startup.Body(first.Text) != startup.Body(l.Text) {
				g.varies = true
			}
			f.groups[head] = g
			f.lead[seq-f.base] = int32(seq - head)
			f.hidden++
			return
		}
	}
	f.open[h] = seq
}

// headOf is the row line seq shows in: the first line of the group it is
// folded into, or seq itself.
func (f *foldIndex) headOf(seq int) int {
	if seq < f.base || seq >= f.next {
		return seq
	}
	k := f.lead[seq-f.base]
	if k == 0 || seq-int(k) < f.held {
		return seq
	}
	return seq - int(k)
}

// group is the group whose first line is seq, or nil when seq stands
// alone.
func (f *foldIndex) group(seq int) *foldGroup {
	if seq < f.held {
		return nil
	}
	return f.groups[seq]
}

// label is the group's row text: its first line with each rank number
// widened to the ranks that printed the line ("TP0" → "TP0-7").
func (g *foldGroup) label(text string) string {
	var b strings.Builder
	at := 0
	for i, n := range g.nums {
		if n.Start < at || n.End > len(text) {
			continue
		}
		b.WriteString(text[at:n.Start])
		b.WriteString(ranges(g.vals[i]))
		at = n.End
	}
	b.WriteString(text[at:])
	return b.String()
}

// mark is what the row ends with: how many lines it stands for, and
// whether their figures differ.
func (g *foldGroup) mark() string {
	if g.varies {
		return fmt.Sprintf(" ×%d, values vary", len(g.members))
	}
	return fmt.Sprintf(" ×%d", len(g.members))
}

// ranges writes sorted numbers compactly: 0-7, 0,2,4-5.
func ranges(vs []int) string {
	var b strings.Builder
	for i := 0; i < len(vs); {
		j := i
		for j+1 < len(vs) && vs[j+1] == vs[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(vs[i]))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(vs[j]))
		}
		i = j + 1
	}
	return b.String()
}
