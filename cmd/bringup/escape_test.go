package main

import (
	"bytes"
	"context"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/exp/teatest/v2"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/fleet"
	"github.com/bringup-dev/bringup/remote/live"
	"github.com/bringup-dev/bringup/remote/sshx"
	"github.com/bringup-dev/bringup/remote/testkit/testbed"
	"github.com/bringup-dev/bringup/ui"
)

// oscRe matches the console's own OSC sequences: its window title and the
// background-colour query.
var oscRe = regexp.MustCompile("\x1b\\](?:[02];escape test|11;\\?)\x07")

// TestHostileLogLineOnTestbed has a unit on a real host print OSC 52 (set
// the clipboard), a window-title sequence and a CSI clear, and checks what
// the console writes to its terminal: none of those sequences, raw, and
// each visible as harmless text instead.
func TestHostileLogLineOnTestbed(t *testing.T) {
	tb := testbed.Start(t, 1)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	const unit = "evil.service"
	script := `printf '\033]52;c;SGVsbG8=\007 title:\033]0;pwned\007 clear:\033[2J EVIL-MARKER\n'; sleep 600`
	if out, err := tb.Run(ctx, "gpu1", "systemd-run --unit="+unit+" --service-type=simple sh -c "+sshx.ShellQuote(script)); err != nil {
		t.Fatalf("start %s: %v: %s", unit, err, out)
	}

	cfg, err := sshx.Resolve(ctx, "gpu1", sshx.ResolveOptions{ConfigFile: tb.SSHConfig()})
	if err != nil {
		t.Fatal(err)
	}
	d := live.New(live.Options{Host: remote.Host{Name: "gpu1", Unit: unit}, SSH: cfg, NoGPU: true})
	theFleet, err := fleet.New([]fleet.HostSpec{{Driver: d, Unit: unit, Engine: "sglang"}}, fleet.Options{Kernels: kernels.DefaultCatalog(), ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	fctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- theFleet.Run(fctx) }()
	defer func() {
		stop()
		_ = <-done
	}()

	m := ui.New(theFleet, ui.Options{Title: "escape test", Kernels: kernels.DefaultCatalog()})
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(160, 30),
		teatest.WithProgramOptions(tea.WithColorProfile(colorprofile.TrueColor)))
	var rec syncBuffer // every byte the program writes to its terminal
	teatest.WaitFor(t, io.TeeReader(tm.Output(), &rec), func(b []byte) bool {
		return bytes.Contains(rec.Bytes(), []byte("EVIL-MARKER"))
	}, teatest.WithDuration(60*time.Second), teatest.WithCheckInterval(50*time.Millisecond))
	tm.Send(tea.KeyPressMsg{Code: 'q', Text: "q"})
	tm.WaitFinished(t, teatest.WithFinalTimeout(5*time.Second))

	out := rec.Bytes()
	for _, raw := range []string{"\x1b]52", "\x1b]0;pwned", "\x1b[2J EVIL"} {
		if bytes.Contains(out, []byte(raw)) {
			t.Errorf("raw %q reached the terminal", raw)
		}
	}
	for _, visible := range []string{"␛]52;c;SGVsbG8=␇", "␛]0;pwned␇", "␛[2J EVIL-MARKER"} {
		if !bytes.Contains(out, []byte(visible)) {
			i := bytes.Index(out, []byte("EVIL-MARKER"))
			t.Errorf("%q not shown; around the marker: %q", visible, out[max(0, i-120):i+11])
		}
	}
	// The program's own OSC sequences (window title, colour queries) end in
	// BEL; any other BEL came from the log line.
	rest := oscRe.ReplaceAllString(string(out), "")
	if i := strings.IndexByte(rest, 0x07); i >= 0 {
		t.Errorf("a stray BEL reached the terminal: %q", rest[max(0, i-40):i+1])
	}
}
