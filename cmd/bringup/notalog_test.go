package main

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestExplainRandomBytesIsNotALog: `head -c 1000000 /dev/urandom |
// bringup explain -` once printed the verdict UNDECIDED (exit 2) on 3 842
// "lines"; it is an error saying the input is not a log, exit 3, and no
// verdict on stdout.
func TestExplainRandomBytesIsNotALog(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 2))
	var b strings.Builder
	for range 1 << 20 {
		b.WriteByte(byte(rng.Uint32()))
	}
	code, out, errOut := runExplainArgs(t, b.String(), "-")
	if code != exitUsage || !strings.Contains(errOut, "bringup explain: stdin: not a log: ") || out != "" {
		t.Errorf("exit %d, stdout %q, stderr %q; want %d, not a log, no verdict", code, out, errOut, exitUsage)
	}
}
