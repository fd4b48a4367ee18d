package config

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestOpenKeepsSelectedGroups checks the groups the console's palette
// gets: each cut down to the hosts selected, empty ones dropped.
func TestOpenKeepsSelectedGroups(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	data := "hosts: [gpu1, gpu2, gpu3, gpu4]\ngroups:\n  rack-a: [gpu1, gpu2]\n  rack-b: [gpu3, gpu4]\n  odd: [gpu1, gpu3]\n"
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	f := Flags{Path: path}
	cfg, hosts, err := f.Open(func(string) string { return "" }, []string{"rack-a"})
	if err != nil || len(hosts) != 2 {
		t.Fatalf("open rack-a: %d hosts, %v", len(hosts), err)
	}
	if got, want := fmt.Sprint(cfg.GroupsOf(hosts)), "map[odd:[gpu1] rack-a:[gpu1 gpu2]]"; got != want {
		t.Errorf("groups %s, want %s", got, want)
	}
}
