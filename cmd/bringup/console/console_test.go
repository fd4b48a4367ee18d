package console

import (
	"bytes"
	"strings"
	"testing"

	"github.com/bringup-dev/bringup/ui/notify"
)

// TestNeedTerminal: without a terminal the console is refused, naming the
// streams and what to run instead for the command.
func TestNeedTerminal(t *testing.T) {
	for name, instead := range map[string]string{"": "`bringup watch`", "demo": "`bringup watch --demo`", "replay": "`bringup watch --replay FILE`"} {
		err := NeedTerminal(strings.NewReader(""), &bytes.Buffer{}, name)
		if err == nil || !strings.Contains(err.Error(), "standard input, standard output: not a terminal") || !strings.Contains(err.Error(), instead) {
			t.Errorf("%q: %v, want a refusal pointing at %s", name, err, instead)
		}
	}
}

// TestSignals: --quiet turns every signal off.
func TestSignals(t *testing.T) {
	set := notify.Defaults()
	if Signals(set, false) != set || Signals(set, true) != (notify.Settings{}) {
		t.Error("Signals: want the settings, or none when quiet")
	}
}
