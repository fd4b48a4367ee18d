package kernels

import (
	"slices"
	"testing"
)

func TestCompareHashes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		local  string
		hosts  map[string]string
		states map[string]DriftState
		badge  string
	}{
		{"all same", "L", map[string]string{"gpu1": "L", "gpu2": "L"}, map[string]DriftState{"gpu1": DriftSame, "gpu2": DriftSame}, ""},
		{"one differs", "L", map[string]string{"gpu1": "old", "gpu2": "L"}, map[string]DriftState{"gpu1": DriftDiffers, "gpu2": DriftSame}, "drift 1/2"},
		{"hosts agree on old", "L", map[string]string{"gpu1": "old", "gpu2": "old"}, map[string]DriftState{"gpu1": DriftDiffers, "gpu2": DriftDiffers}, "drift 2/2"},
		{"unknown host", "L", map[string]string{"gpu1": "", "gpu2": "L"}, map[string]DriftState{"gpu1": DriftUnknown, "gpu2": DriftSame}, ""},
		{"no build, hosts disagree", "", map[string]string{"gpu1": "a", "gpu2": "b", "gpu3": ""}, map[string]DriftState{"gpu1": DriftUnknown, "gpu2": DriftUnknown, "gpu3": DriftUnknown}, "drift: 2 versions"},
		{"no build, hosts agree", "", map[string]string{"gpu1": "a", "gpu2": "a"}, map[string]DriftState{"gpu1": DriftUnknown, "gpu2": DriftUnknown}, ""},
		{"no hosts", "L", nil, map[string]DriftState{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := CompareHashes(tc.local, tc.hosts)
			for h, want := range tc.states {
				if d.Hosts[h] != want {
					t.Errorf("%s: %v, want %v", h, d.Hosts[h], want)
				}
			}
			if len(d.Hosts) != len(tc.states) {
				t.Errorf("hosts: %v", d.Hosts)
			}
			if d.Badge() != tc.badge || d.Drifting() != (tc.badge != "") {
				t.Errorf("badge %q (drifting %v), want %q", d.Badge(), d.Drifting(), tc.badge)
			}
		})
	}
	d := CompareHashes("L", map[string]string{"gpu2": "x", "gpu1": "y", "gpu3": "L"})
	if got := d.Differing(); !slices.Equal(got, []string{"gpu1", "gpu2"}) || d.Versions != 3 {
		t.Errorf("differing %v, versions %d", got, d.Versions)
	}
	if DriftSame.String() != "same" || DriftDiffers.String() != "differs" || DriftUnknown.String() != "unknown" {
		t.Error("state names")
	}
}
