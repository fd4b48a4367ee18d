package main

import (
	"context"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/bringup-dev/bringup/remote/sshx"
	"github.com/bringup-dev/bringup/remote/testkit/testbed"
)

// hostileStderr is what the test host's tools write to stderr: OSC 52
// (set the clipboard), a window title, a screen clear, a C1 CSI as UTF-8
// and as a raw byte, and a bell.
const hostileStderr = `%s: \033]52;c;SGVsbG8=\007 \033]0;pwned\007 \033[2J \302\23331m \233 bell\007`

// TestHostileStderrAndMissingUnitOnTestbed runs doctor, status and watch
// against a real host. First, with a unit the host does not have: status's
// state column and watch's unit line say not-found. Then the host's
// journalctl, nvidia-smi and systemd-stdio-bridge (stream-local forwarding
// off, so the bridge is tried) write escape sequences to stderr: doctor's
// output quotes them, made visible, and holds no ESC, BEL or C1 byte.
func TestHostileStderrAndMissingUnitOnTestbed(t *testing.T) {
	tb := testbed.Start(t, 1)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	hosts := []string{"-F", tb.SSHConfig(), "-H", "gpu1"}

	t.Run("missing unit", func(t *testing.T) {
		var out, errOut syncBuffer
		code := run(ctx, testEnv(&out, &errOut), append([]string{"status", "-u", "nosuch.service", "--timeout", "10s"}, hosts...))
		row := ""
		for l := range strings.Lines(out.String()) {
			if strings.HasPrefix(l, "gpu1") {
				row = l
			}
		}
		if f := strings.Fields(row); len(f) < 3 || f[2] != "not-found" {
			t.Errorf("status exit %d: gpu1's row %q, want its unit state not-found\n%s%s", code, row, out.String(), errOut.String())
		}
		out, errOut = syncBuffer{}, syncBuffer{}
		code = run(ctx, testEnv(&out, &errOut), append([]string{"watch", "-u", "nosuch.service", "--timeout", "5s"}, hosts...))
		if !strings.Contains(out.String(), " gpu1     unit not-found\n") {
			t.Errorf("watch exit %d, no line saying the unit is not found:\n%s%s", code, out.String(), errOut.String())
		}
	})

	t.Run("hostile stderr", func(t *testing.T) {
		setup := "printf 'AllowStreamLocalForwarding no\\n' > /etc/ssh/sshd_config.d/50-test.conf && systemctl reload ssh"
		for _, tool := range []string{"journalctl", "nvidia-smi", "systemd-stdio-bridge"} {
			script := "#!/bin/sh\nprintf '" + hostileStderr + "\\n' " + tool + " >&2\nexit 2\n"
			setup += "; printf %s " + sshx.ShellQuote(script) + " > /usr/local/sbin/" + tool + " && chmod +x /usr/local/sbin/" + tool
		}
		setup += "; command -v journalctl nvidia-smi systemd-stdio-bridge"
		if o, err := tb.Run(ctx, "gpu1", setup); err != nil || strings.Count(o, "/usr/local/sbin/") != 3 {
			t.Fatalf("hostile tools not first on the login PATH: %v\n%s", err, o)
		}
		// sshd reloads its configuration: wait until it answers again.
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			if _, err := tb.Run(ctx, "gpu1", "true"); err == nil {
				break
			} else if time.Now().After(deadline) {
				t.Fatalf("sshd did not come back after the reload: %v", err)
			}
		}
		var out, errOut syncBuffer
		code := run(ctx, testEnv(&out, &errOut), append([]string{"doctor"}, hosts...))
		all := out.String() + errOut.String()
		t.Logf("doctor exit %d:\n%s", code, all)
		for i, r := range all {
			if r == 0x1b || r == 0x07 || r >= 0x80 && r <= 0x9f || r == utf8.RuneError && !strings.HasPrefix(all[i:], "\uFFFD") {
				// (a raw C1 byte, invalid UTF-8, decodes as RuneError)
				t.Errorf("doctor wrote control %U at byte %d: %q", r, i, all[max(0, i-40):min(len(all), i+20)])
			}
		}
		for _, tool := range []string{"journalctl", "nvidia-smi"} {
			if !strings.Contains(all, tool+": ␛]52;c;SGVsbG8=␇ ␛]0;pwned␇ ␛[2J") {
				t.Errorf("%s's stderr is not shown, made visible", tool)
			}
		}
		if code != 1 {
			t.Errorf("doctor exit %d, want 1 (journalctl fails)", code)
		}
	})
}
