package capturelint

import (
	"strings"
	"testing"
	"time"
)

// Pathological inputs stay fast: deep nesting, long statements.
func TestLintLargeInputs(t *testing.T) {
	for name, src := range map[string]string{
		"nested calls":   strings.Repeat("f(", 5000) + strings.Repeat(")", 5000),
		"nested dicts":   strings.Repeat("{'on': ", 3000) + strings.Repeat("}", 3000),
		"long statement": "x = [" + strings.Repeat("a.item(), ", 20000) + "]",
		"many lines":     strings.Repeat("if a:\n    b.item()\n", 20000),
	} {
		start := time.Now()
		Lint([]File{{Path: "m.py", Src: src}}, seedOptions)
		if d := time.Since(start); d > 30*time.Second {
			t.Errorf("%s: %v", name, d)
		}
	}
}
