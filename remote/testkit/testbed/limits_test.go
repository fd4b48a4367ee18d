package testbed

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestRaiseLimits: a limit below what the hosts need is raised to it and
// reported; one already higher is left as it is, never lowered.
func TestRaiseLimits(t *testing.T) {
	dir := t.TempDir()
	set := func(name, v string) string {
		p := filepath.Join(dir, strings.ReplaceAll(name, ".", "/"))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	inst := set("fs.inotify.max_user_instances", "128\n") // the kernel's default
	watches := set("fs.inotify.max_user_watches", "2000000\n")
	got, err := raiseLimits(dir, 256)
	if err != nil {
		t.Fatal(err)
	}
	want := []Limit{{Name: "fs.inotify.max_user_instances", From: 128, To: 128 + 16*256}}
	if !slices.Equal(got, want) {
		t.Errorf("raised %v, want %v", got, want)
	}
	for p, v := range map[string]string{inst: "4224\n", watches: "2000000\n"} {
		if b, _ := os.ReadFile(p); string(b) != v {
			t.Errorf("%s = %q, want %q", p, b, v)
		}
	}
	// Enough already: nothing changes.
	if got, err := raiseLimits(dir, 16); err != nil || len(got) != 0 {
		t.Errorf("16 hosts after 256: raised %v (%v), want nothing", got, err)
	}
	// A value that is no number is an error naming the setting.
	set("fs.inotify.max_user_watches", "lots")
	if _, err := raiseLimits(dir, 1); err == nil || !strings.Contains(err.Error(), "fs.inotify.max_user_watches") {
		t.Errorf("unreadable limit: err %v, want one naming it", err)
	}
}
