package sanitize

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestLine(t *testing.T) {
	tests := []struct {
		name, in, want string
		cut            bool
	}{
		{"plain", "Load weight begin. avail mem=139.29 GB", "Load weight begin. avail mem=139.29 GB", false},
		{"tqdm keeps last refresh", "\rCapturing batches (bs=1):  50%|█| 1/2\rCapturing batches (bs=2): 100%|██| 2/2", "Capturing batches (bs=2): 100%|██| 2/2", false},
		{"trailing cr ignored", "Loading safetensors checkpoint shards: 100% Completed | 2/2\r", "Loading safetensors checkpoint shards: 100% Completed | 2/2", false},
		{"sgr stripped", "\x1b[1;36m(EngineCore_DP0 pid=441)\x1b[0;0m INFO", "(EngineCore_DP0 pid=441) INFO", false},
		{"cursor move made visible", "ok\x1b[2Jgone", "ok␛[2Jgone", false},
		{"osc title made visible", "\x1b]0;pwned\x07x", "␛]0;pwned␇x", false},
		{"bell and nul", "a\x07b\x00c", "a␇b␀c", false},
		{"tab and newline", "a\tb\nc", "a b⏎c", false},
		{"c1 control", "a\u009bb", "a�b", false},
		{"bidi override", "a\u202eb", "a�b", false},
		{"invalid utf8", "a\xffb", "a�b", false},
		{"del", "a\x7fb", "a␡b", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, cut := Line(tt.in, 0)
			if got != tt.want || cut != tt.cut {
				t.Errorf("Line(%q) = %q, %v; want %q, %v", tt.in, got, cut, tt.want, tt.cut)
			}
		})
	}
}

func TestLineCutsOnRuneBoundary(t *testing.T) {
	in := strings.Repeat("█", 100) // 3 bytes each
	got, cut := Line(in, 10)
	if !cut {
		t.Fatal("want cut")
	}
	if !strings.HasSuffix(got, TruncMark) {
		t.Fatalf("missing mark: %q", got)
	}
	body := strings.TrimSuffix(got, TruncMark)
	if len(body) > 10 || !utf8.ValidString(body) || body != strings.Repeat("█", 3) {
		t.Fatalf("body = %q (%d bytes)", body, len(body))
	}
}

func FuzzLine(f *testing.F) {
	for _, s := range []string{"plain", "\x1b[31mred\x1b[0m", "a\rb", "\xff\xfe", "\x1b]8;;x\x07"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, _ := Line(s, 200)
		if !utf8.ValidString(got) {
			t.Fatalf("invalid utf8 out of %q", s)
		}
		for _, r := range got {
			if r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) {
				t.Fatalf("control %U survived in %q", r, got)
			}
		}
		if len(got) > 200+len(TruncMark) {
			t.Fatalf("too long: %d", len(got))
		}
	})
}

func BenchmarkLinePlain(b *testing.B) {
	s := "[2026-11-30 10:00:00 TP0] Loading safetensors checkpoint shards:  12% Completed | 8/65 [00:58<07:52,  7.27s/it]"
	b.ReportAllocs()
	for b.Loop() {
		Line(s, 0)
	}
}

// TestError: an error that quotes a host prints safely and still unwraps
// to what it wraps.
func TestError(t *testing.T) {
	inner := errors.New("ssh: disconnect, reason 2: \x1b]0;pwned\x07 Too many authentication failures")
	err := Error(fmt.Errorf("dial gpu1: %w", inner))
	if got := err.Error(); got != "dial gpu1: ssh: disconnect, reason 2: ␛]0;pwned␇ Too many authentication failures" {
		t.Errorf("Error() = %q", got)
	}
	if !errors.Is(err, inner) {
		t.Error("errors.Is lost the wrapped error")
	}
	if Error(nil) != nil {
		t.Error("Error(nil) is not nil")
	}
}
