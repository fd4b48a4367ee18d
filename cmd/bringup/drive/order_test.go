package drive

import (
	"bytes"
	"fmt"
	"testing"
	"time"
)

// TestTimeOrder: lines come out in host-time order, none held longer
// than the window; the latest let out stamps what ends the watch.
func TestTimeOrder(t *testing.T) {
	host := time.Date(2026, 1, 1, 3, 10, 0, 0, time.UTC)
	wall := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	at := func(sec int) time.Time { return host.Add(time.Duration(sec) * time.Second) }
	line := func(name string, sec int) string { return fmt.Sprintf("%s %s\n", at(sec).Format("15:04:05"), name) }
	o := &timeOrder{window: 3 * time.Second}
	var w bytes.Buffer
	// gpu4's batch comes first with a later line; gpu1's, a second on,
	// with earlier ones.
	o.add(at(60), wall, line("gpu4", 60))
	o.add(at(58), wall.Add(time.Second), line("gpu1", 58))
	o.add(at(59), wall.Add(time.Second), line("gpu1", 59))
	o.release(&w, wall.Add(2*time.Second))
	if w.Len() != 0 {
		t.Fatalf("let out before the window: %q", w.String())
	}
	o.release(&w, wall.Add(3*time.Second)) // gpu4's is due, and the earlier ones with it
	if want := line("gpu1", 58) + line("gpu1", 59) + line("gpu4", 60); w.String() != want {
		t.Errorf("released %q, want %q", w.String(), want)
	}
	w.Reset()
	o.add(at(70), wall.Add(4*time.Second), line("gpu2", 70))
	o.add(at(65), wall.Add(5*time.Second), line("gpu3", 65))
	o.add(at(65), wall.Add(5*time.Second), line("gpu3 again", 65))
	o.release(&w, wall.Add(7*time.Second)) // gpu2's is due; gpu3's earlier lines go with it
	if want := line("gpu3", 65) + line("gpu3 again", 65) + line("gpu2", 70); w.String() != want {
		t.Errorf("released %q, want %q", w.String(), want)
	}
	w.Reset()
	o.add(at(80), wall.Add(8*time.Second), line("gpu1", 80))
	o.flush(&w)
	if w.String() != line("gpu1", 80) || len(o.held) != 0 {
		t.Errorf("flush: %q, %d held", w.String(), len(o.held))
	}
	if got := o.after(at(75)); !got.Equal(at(80)) {
		t.Errorf("after(75) = %v, want the last line's %v", got, at(80))
	}
	if got := o.after(at(90)); !got.Equal(at(90)) {
		t.Errorf("after(90) = %v", got)
	}
}
