package output

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"bringup/remote/doctor"
)

// TestDoctorPrintsNoControl: whatever a report holds, Doctor's output has
// no escape, bell or C1 character; the host's text stays readable.
func TestDoctorPrintsNoControl(t *testing.T) {
	evil := "\x1b]52;c;SGVsbG8=\x07 \x1b]0;pwned\x07 \x1b[2J \u009b31m \x9b"
	r := &doctor.Report{Host: "gpu1" + evil, Target: "root@h:22", Checks: []doctor.Check{
		{Name: "journald", Status: doctor.Fail, Detail: "journalctl: " + evil, Fix: "fix " + evil},
	}}
	var b bytes.Buffer
	Doctor(&b, r)
	out := b.String()
	// (a raw C1 byte is invalid UTF-8)
	if strings.ContainsAny(out, "\x1b\x07\u009b") || !utf8.ValidString(out) {
		t.Errorf("control characters in doctor's output: %q", out)
	}
	if !strings.Contains(out, "journalctl: ␛]52;c;SGVsbG8=␇ ␛]0;pwned␇ ␛[2J") {
		t.Errorf("the host's text is not shown, made visible: %q", out)
	}
}
