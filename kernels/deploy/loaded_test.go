package deploy

import (
	"strings"
	"testing"
)

func TestParseLoaded(t *testing.T) {
	h := strings.Repeat("ab", 32)
	for _, tc := range []struct {
		line string
		want Loaded
		ok   bool
	}{
		{"[2025-01-02 03:04:05] kdtree-verify: sitecustomize loaded from /opt/kdtree/site, mode=on, content sha256=" + h,
			Loaded{Kernel: "kdtree-verify", Dir: "/opt/kdtree/site", Mode: "on", Hash: h}, true},
		{"kdtree-verify: sitecustomize loaded from /opt/a b, mode=off, content sha256=" + h + "\n",
			Loaded{Kernel: "kdtree-verify", Dir: "/opt/a b", Mode: "off", Hash: h}, true},
		// infersim's text when the directory could not be hashed.
		{"kdtree-verify: sitecustomize loaded from /opt/kdtree/site, mode=on, content sha256=unavailable (hash /opt/kdtree/site: permission denied)", Loaded{}, false},
		{"kdtree-verify: sitecustomize loaded from /opt/kdtree/site, mode=on", Loaded{}, false},
		{"Load weight begin. avail mem=78.5 GB", Loaded{}, false},
		{": sitecustomize loaded from /x, mode=on, content sha256=" + h, Loaded{}, false},
	} {
		got, ok := ParseLoaded(tc.line)
		if ok != tc.ok || got != tc.want {
			t.Errorf("ParseLoaded(%q) = %+v, %v; want %+v, %v", tc.line, got, ok, tc.want, tc.ok)
		}
	}
}
