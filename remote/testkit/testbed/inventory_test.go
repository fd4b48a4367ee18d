package testbed

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// writeInventoryFixture makes an inventory directory as Up leaves it (its
// state file, the infersim copy, a console log) for a run with no hosts.
func writeInventoryFixture(t *testing.T, runDir, inv, id string, own bool) runState {
	t.Helper()
	st := runState{RunID: id, Inventory: inv, OwnInventory: own, RunDir: runDir, Created: time.Now().UTC()}
	for _, p := range []string{filepath.Join(inv, "bin", "infersim"), filepath.Join(inv, "console-gpu1.log")} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := writeJSON(recordPath(runDir, id), st); err != nil {
		t.Fatal(err)
	}
	if err := writeJSON(filepath.Join(inv, stateName), st); err != nil {
		t.Fatal(err)
	}
	return st
}

// TestDownRemovesTheInventoryItMade: `testbed down` said "removing run …"
// and left the run's inventory under /run (a 9 MB infersim copy each, on
// tmpfs). Down removes an inventory Up made, whole, and from one it did
// not make (a test's TempDir) only the run's state file.
func TestDownRemovesTheInventoryItMade(t *testing.T) {
	runDir := t.TempDir()
	own := writeInventoryFixture(t, runDir, filepath.Join(runDir, "a1b2c3"), "a1b2c3", true)
	given := writeInventoryFixture(t, runDir, filepath.Join(t.TempDir(), "mine"), "d4e5f6", false)
	for _, st := range []runState{own, given} {
		tb := &Testbed{runDir: runDir, logf: t.Logf, st: st}
		if err := tb.Down(context.Background()); err != nil {
			t.Fatalf("down %s: %v", st.RunID, err)
		}
		if _, err := os.Stat(recordPath(runDir, st.RunID)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("run %s: record still there (%v)", st.RunID, err)
		}
	}
	if _, err := os.Stat(own.Inventory); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the inventory Up made is still there after down (%v)", err)
	}
	if _, err := os.Stat(filepath.Join(given.Inventory, stateName)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the given inventory keeps its state file (%v)", err)
	}
	if _, err := os.Stat(filepath.Join(given.Inventory, "console-gpu1.log")); err != nil {
		t.Errorf("down removed files of an inventory it did not make: %v", err)
	}
}

// TestOrphanInventoriesRemoved: the inventories earlier runs left under
// the run directory (their records gone) are removed by the next sweep;
// what is not one, or is still claimed, stays.
func TestOrphanInventoriesRemoved(t *testing.T) {
	runDir := t.TempDir()
	orphan := writeInventoryFixture(t, runDir, filepath.Join(runDir, "0a0b0c"), "0a0b0c", true)
	if err := os.Remove(recordPath(runDir, orphan.RunID)); err != nil { // as the old Down did
		t.Fatal(err)
	}
	claimed := writeInventoryFixture(t, runDir, filepath.Join(runDir, "111111"), "111111", true)
	being := writeInventoryFixture(t, runDir, filepath.Join(runDir, "222222"), "222222", true)
	if err := os.Remove(recordPath(runDir, being.RunID)); err != nil {
		t.Fatal(err)
	}
	noState := filepath.Join(runDir, "333333")
	other := filepath.Join(runDir, "notarun")
	for _, d := range []string{noState, other} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := writeJSON(filepath.Join(other, stateName), runState{RunID: "notarun"}); err != nil {
		t.Fatal(err)
	}
	if err := removeOrphanInventories(runDir, being.Inventory, t.Logf); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(orphan.Inventory); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("orphan inventory still there (%v)", err)
	}
	for _, d := range []string{claimed.Inventory, being.Inventory, noState, other} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s removed: %v", d, err)
		}
	}
}
