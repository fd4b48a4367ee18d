package cli

import (
	"runtime/debug"
	"testing"
)

// TestVersionString: a release's -ldflags version wins; else the module
// version and the VCS revision from the build info.
func TestVersionString(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.26.7", Main: debug.Module{Version: "(devel)"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "d365f93a1b2c3d4e5f"}, {Key: "vcs.modified", Value: "true"}}}
	for _, tc := range []struct {
		linked string
		bi     *debug.BuildInfo
		ok     bool
		want   string
	}{
		{"v1.2.3", bi, true, "bringup v1.2.3 (go1.26.7)"},
		{"", bi, true, "bringup devel d365f93a1b2c+dirty (go1.26.7)"},
		{"", &debug.BuildInfo{GoVersion: "go1.26.7", Main: debug.Module{Version: "v0.4.0"}}, true, "bringup v0.4.0 (go1.26.7)"},
		{"", nil, false, "bringup devel"},
		{"v1.2.3", nil, false, "bringup v1.2.3"},
	} {
		if got := VersionString(tc.linked, tc.bi, tc.ok); got != tc.want {
			t.Errorf("VersionString(%q, …) = %q, want %q", tc.linked, got, tc.want)
		}
	}
}
