package sim

import (
	"slices"
	"testing"
)

// TestGroupsCoverTheScenario: every scenario's groups name exactly its
// hosts, each host in one group, and there are two of them (the demo's
// table then has group rows to show).
func TestGroupsCoverTheScenario(t *testing.T) {
	for _, sc := range Scenarios() {
		specs, err := Scenario(sc)
		if err != nil {
			t.Fatal(err)
		}
		groups := Groups(sc)
		var in []string
		for _, members := range groups {
			in = append(in, members...)
		}
		slices.Sort(in)
		var names []string
		for _, s := range specs {
			names = append(names, s.Name)
		}
		slices.Sort(names)
		if len(groups) != 2 || !slices.Equal(in, names) {
			t.Errorf("%s: groups %v for hosts %v", sc, groups, names)
		}
	}
}
