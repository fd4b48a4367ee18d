package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestLoadKeepsSelectedGroups checks the groups the console's palette
// gets: each cut down to the hosts selected, empty ones dropped.
func TestLoadKeepsSelectedGroups(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	cfg := "hosts: [gpu1, gpu2, gpu3, gpu4]\ngroups:\n  rack-a: [gpu1, gpu2]\n  rack-b: [gpu3, gpu4]\n  odd: [gpu1, gpu3]\n"
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	ff := fleetFlags{configPath: path}
	var out, errOut syncBuffer
	if _, hosts, err := ff.load(testEnv(&out, &errOut), []string{"rack-a"}); err != nil || len(hosts) != 2 {
		t.Fatalf("load rack-a: %d hosts, %v", len(hosts), err)
	}
	if got, want := fmt.Sprint(ff.groups), "map[odd:[gpu1] rack-a:[gpu1 gpu2]]"; got != want {
		t.Errorf("groups %s, want %s", got, want)
	}
}
