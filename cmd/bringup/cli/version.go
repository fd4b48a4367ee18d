package cli

import (
	"fmt"
	"runtime/debug"
)

// VersionString is the version a release build was linked with, else the
// module's version and VCS revision from the build info.
func VersionString(linked string, bi *debug.BuildInfo, ok bool) string {
	v := "devel"
	switch {
	case linked != "":
		v = linked
	case ok && bi.Main.Version != "" && bi.Main.Version != "(devel)":
		v = bi.Main.Version
	}
	if !ok {
		return "bringup " + v
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 && linked == "" {
			v += " " + s.Value[:12]
		}
		if s.Key == "vcs.modified" && s.Value == "true" && linked == "" {
			v += "+dirty"
		}
	}
	return fmt.Sprintf("bringup %s (%s)", v, bi.GoVersion)
}
