package remote

import (
	"strings"
	"testing"
)

func TestParseLoadedKernel(t *testing.T) {
	h := strings.Repeat("ab", 32)
	for _, tc := range []struct {
		line string
		want LoadedKernel
		ok   bool
	}{
		{"[2025-01-02 03:04:05] kdtree-verify: sitecustomize loaded from /opt/kdtree/site, mode=on, content sha256=" + h,
			LoadedKernel{Kernel: "kdtree-verify", Dir: "/opt/kdtree/site", Mode: "on", Hash: h}, true},
		{"kdtree-verify: sitecustomize loaded from /opt/a b, mode=off, content sha256=" + h + "\n",
			LoadedKernel{Kernel: "kdtree-verify", Dir: "/opt/a b", Mode: "off", Hash: h}, true},
		// infersim's text when the directory could not be hashed.
		{"kdtree-verify: sitecustomize loaded from /opt/kdtree/site, mode=on, content sha256=unavailable (hash /opt/kdtree/site: permission denied)", LoadedKernel{}, false},
		{"kdtree-verify: sitecustomize loaded from /opt/kdtree/site, mode=on", LoadedKernel{}, false},
		{"Load weight begin. avail mem=78.5 GB", LoadedKernel{}, false},
		{": sitecustomize loaded from /x, mode=on, content sha256=" + h, LoadedKernel{}, false},
	} {
		got, ok := ParseLoadedKernel(tc.line)
		if ok != tc.ok || got != tc.want {
			t.Errorf("ParseLoadedKernel(%q) = %+v, %v; want %+v, %v", tc.line, got, ok, tc.want, tc.ok)
		}
	}
}
