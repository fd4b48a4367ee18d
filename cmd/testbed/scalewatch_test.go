package main

import (
	"reflect"
	"slices"
	"testing"

	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/startup"
)

// TestTeeKeepsTheSnapshot: the watcher's snapshot after batches of the
// states taken anew is the fleet's, and the whole batch they followed
// (the console's too) is not written to.
func TestTeeKeepsTheSnapshot(t *testing.T) {
	state := func(name string, p startup.Phase) remote.HostState {
		return remote.HostState{Name: name, Startup: startup.Startup{Phase: p}}
	}
	whole := []remote.HostState{state("a", startup.Weights), state("b", startup.Weights), state("c", startup.Weights)}
	was := slices.Clone(whole)
	var s teeSource
	for _, b := range []remote.Batch{
		{Hosts: whole},
		{Delta: true, Taken: []int{1}, States: []remote.HostState{state("b", startup.Serving)}},
		{Delta: true, Taken: []int{0, 2}, States: []remote.HostState{state("a", startup.Failed), state("c", startup.Serving)}},
	} {
		s.keep(b)
	}
	want := []remote.HostState{state("a", startup.Failed), state("b", startup.Serving), state("c", startup.Serving)}
	if !reflect.DeepEqual(s.hosts, want) {
		t.Errorf("snapshot %+v, want %+v", s.hosts, want)
	}
	if !reflect.DeepEqual(whole, was) {
		t.Error("the whole batch's hosts were written to")
	}
	s.keep(remote.Batch{Hosts: was})
	if &s.hosts[0] != &was[0] {
		t.Error("a whole batch is not the snapshot")
	}
}
