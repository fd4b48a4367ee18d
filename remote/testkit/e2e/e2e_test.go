package e2e

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// recorder is a testing.TB whose Skipf and Fatalf stop the gate the way
// the real ones do (by unwinding), and record what it said.
type recorder struct {
	testing.TB
	skipped, failed string
}

type stop struct{}

func (r *recorder) Helper() {}

func (r *recorder) Skipf(format string, args ...any) {
	r.skipped = fmt.Sprintf(format, args...)
	panic(stop{})
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = fmt.Sprintf(format, args...)
	panic(stop{})
}

// gate runs Require on a recorder and returns it.
func gate(t *testing.T, needs ...Need) *recorder {
	r := &recorder{TB: t}
	func() {
		defer func() {
			if v := recover(); v != nil {
				if _, ok := v.(stop); !ok {
					panic(v)
				}
			}
		}()
		Require(r, needs...)
	}()
	return r
}

func TestRequireSkipsWithoutEnv(t *testing.T) {
	for _, v := range []string{"", "0", "true"} {
		t.Setenv(Env, v)
		checked := false
		r := gate(t, func() error { checked = true; return errors.New("missing") })
		if !strings.Contains(r.skipped, "set BRINGUP_E2E=1 or run make test") || r.failed != "" {
			t.Errorf("%s=%q: skipped %q, failed %q; want a skip saying how to run it", Env, v, r.skipped, r.failed)
		}
		if checked {
			t.Errorf("%s=%q: a need was checked though the test is skipped", Env, v)
		}
	}
}

func TestRequireFailsOnMissingNeed(t *testing.T) {
	t.Setenv(Env, "1")
	second := false
	r := gate(t, func() error { return errors.New("needs tmux") }, func() error { second = true; return nil })
	if r.skipped != "" || !strings.Contains(r.failed, "needs tmux") {
		t.Errorf("skipped %q, failed %q; want a failure naming what is missing", r.skipped, r.failed)
	}
	if second {
		t.Error("the gate went on checking after the first missing need")
	}
}

func TestRequireRunsWhenEverythingIsThere(t *testing.T) {
	t.Setenv(Env, "1")
	r := gate(t, File(t.TempDir()), func() error { return nil })
	if r.skipped != "" || r.failed != "" {
		t.Errorf("skipped %q, failed %q; want the test to run", r.skipped, r.failed)
	}
}

func TestNeeds(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "absent")
	for _, tc := range []struct {
		name string
		need Need
		want string // "" when met
	}{
		{"file there", File(t.TempDir()), ""},
		{"file absent", File(missing), "needs " + missing},
		{"command absent", Command("bringup-no-such-command"), "needs bringup-no-such-command on PATH"},
		{"command there", Command("sh"), ""},
	} {
		err := tc.need()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}
