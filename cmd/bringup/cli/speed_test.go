package cli

import (
	"bytes"
	"strings"
	"testing"
)

// TestSpeedFlagRefusesWhatNoClockCanRun: --speed takes a finite number
// greater than 0 and at most MaxSpeed; anything else is a usage error
// naming the flag (NaN, Inf and 1e308 once hung a replay and sent the
// demo to the year 1734; 100000 passed the documented 10000).
func TestSpeedFlagRefusesWhatNoClockCanRun(t *testing.T) {
	for _, tc := range []struct {
		arg    string
		want   float64
		stderr string // "" when accepted
	}{
		{"NaN", 0, "--speed NaN: not a finite number"},
		{"nan", 0, "--speed nan: not a finite number"},
		{"Inf", 0, "--speed Inf: not a finite number"},
		{"-Inf", 0, "--speed -Inf: not a finite number"},
		{"1e308", 0, "--speed 1e308: at most 10000"},
		{"100000", 0, "--speed 100000: at most 10000"},
		{"10000.5", 0, "--speed 10000.5: at most 10000"},
		{"0", 0, "--speed 0: must be greater than 0"},
		{"-1", 0, "--speed -1: must be greater than 0"},
		{"fast", 0, "--speed fast: not a number"},
		{"\x1b[2J", 0, `--speed "\x1b[2J": not a number`},
		{"10000", 10000, ""},
		{"0.25", 0.25, ""},
		{"18", 18, ""},
	} {
		var out, errOut bytes.Buffer
		fs := NewFlags(&out, &errOut, "replay", "bringup replay [--speed N] FILE")
		speed := fs.Speed("speed", 0, "`N`")
		code, stop := ParseArgs(fs, []string{"--speed", tc.arg, "rec.jsonl"})
		if tc.stderr == "" {
			if stop || *speed != tc.want || errOut.Len() > 0 {
				t.Errorf("--speed %q: code %d stop %v speed %v stderr %q, want %v accepted", tc.arg, code, stop, *speed, errOut.String(), tc.want)
			}
			continue
		}
		if code != ExitUsage || !stop || !strings.Contains(errOut.String(), "bringup replay: "+tc.stderr+"\n") {
			t.Errorf("--speed %q: code %d stop %v stderr %q, want exit %d and %q", tc.arg, code, stop, errOut.String(), ExitUsage, tc.stderr)
		}
	}
}

// TestSpeedFlagDefault: the default is kept as given (0 is "as recorded"
// for a replay) and shown in the help as a float64 flag's would be.
func TestSpeedFlagDefault(t *testing.T) {
	var out, errOut bytes.Buffer
	fs := NewFlags(&out, &errOut, "demo", "bringup demo [--speed N]")
	var speed float64
	fs.SpeedVar(&speed, "speed", 18, "`N` simulated seconds per real second")
	zero := fs.Speed("replay-speed", 0, "`N` as recorded")
	if code, stop := ParseArgs(fs, nil); stop || code != 0 || speed != 18 || *zero != 0 {
		t.Fatalf("no flags: code %d stop %v speed %v %v, want 18 and 0", code, stop, speed, *zero)
	}
	if code, stop := ParseArgs(fs, []string{"--help"}); !stop || code != ExitOK {
		t.Fatalf("--help: code %d stop %v", code, stop)
	}
	if !strings.Contains(out.String(), "N simulated seconds per real second (default 18)\n") || strings.Contains(out.String(), "as recorded (default 0)") {
		t.Errorf("help:\n%s", out.String())
	}
}
