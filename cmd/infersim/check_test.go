package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestCaptureCheck: the stand-in prints the reference check's real
// output, byte for byte, and exits as it did.
func TestCaptureCheck(t *testing.T) {
	gpuText := func(name string) string {
		b, err := os.ReadFile(filepath.Join("..", "..", "kernels", "capturecheck", "testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	tests := []struct {
		mode, unsafe string
		want         string
		code         int
	}{
		{"validate", "", gpuText("capture-validate.txt"), 1},
		{"on", "", gpuText("capture-on.txt"), 0},
		{"off", "", gpuText("capture-off.txt"), 0},
		{"on", "validate,on", gpuText("capture-validate.txt"), 1},
	}
	for _, tt := range tests {
		env := map[string]string{"INFERSIM_CHECK_SECONDS": "0", "INFERSIM_UNSAFE_MODES": tt.unsafe}
		var out, errOut bytes.Buffer
		code := captureCheck(context.Background(), []string{"--mode", tt.mode}, func(k string) string { return env[k] }, &out, &errOut)
		if code != tt.code || out.String() != tt.want || errOut.Len() != 0 {
			t.Errorf("capture-check --mode %s (unsafe %q): exit %d, stderr %q, stdout\n%s", tt.mode, tt.unsafe, code, errOut.String(), out.String())
		}
	}
	var errOut bytes.Buffer
	if code := captureCheck(context.Background(), nil, func(string) string { return "" }, &bytes.Buffer{}, &errOut); code != 2 {
		t.Errorf("no --mode: exit %d, want 2 (%s)", code, errOut.String())
	}
}
