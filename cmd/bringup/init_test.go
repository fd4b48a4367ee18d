package main

import (
	"strings"
	"testing"
)

// TestInitJSONRefusesStdout: --json and -o - would mix the config and the
// JSON lines on stdout; init refuses before it dials anything.
func TestInitJSONRefusesStdout(t *testing.T) {
	var out, errOut syncBuffer
	code := run(t.Context(), testEnv(&out, &errOut), []string{"init", "--json", "-o", "-", "gpu1"})
	if code != exitUsage || !strings.Contains(errOut.String(), "--json and -o - both want standard output") || out.String() != "" {
		t.Errorf("exit %d, stdout %q, stderr %q; want a usage refusal", code, out.String(), errOut.String())
	}
}
