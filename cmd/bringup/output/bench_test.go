package output

import (
	"bytes"
	"strings"
	"testing"
)

// TestBenchBoardTerminal: on a terminal every bar is drawn at 0 when the
// loads are sent, each on its own line, and redrawn in place (the cursor
// goes back up over them); the waiting note is taken off its line.
func TestBenchBoardTerminal(t *testing.T) {
	var w bytes.Buffer
	waiting := NewBenchBoard(&w, true, nil, 0)
	waiting.Waiting("bench: waiting for 2 hosts to answer…")
	waiting.Close()
	if got, want := w.String(), "\r\x1b[2Kbench: waiting for 2 hosts to answer…\r\x1b[2K"; got != want {
		t.Errorf("waiting: %q, want %q", got, want)
	}
	w.Reset()
	b := NewBenchBoard(&w, true, []string{"gpu1", "gpu2"}, 64)
	b.Start()
	want := "\r\x1b[2Kgpu1     ░░░░░░░░░░░░░░░░░░░░ 0/64\n\r\x1b[2Kgpu2     ░░░░░░░░░░░░░░░░░░░░ 0/64\n"
	if w.String() != want {
		t.Errorf("start:\n%q\nwant\n%q", w.String(), want)
	}
	w.Reset()
	b.Progress("gpu2", 32, 64)
	want = "\x1b[2A\r\x1b[2Kgpu1     ░░░░░░░░░░░░░░░░░░░░ 0/64\n\r\x1b[2Kgpu2     ██████████░░░░░░░░░░ 32/64\n"
	if w.String() != want {
		t.Errorf("progress:\n%q\nwant\n%q", w.String(), want)
	}
	w.Reset()
	b.End("gpu1", 64)
	if !strings.Contains(w.String(), "gpu1     ████████████████████ 64/64\n") {
		t.Errorf("end: %q", w.String())
	}
}

// TestBenchBoardPipe: anywhere but a terminal, no redraws and no escape:
// one line per host as its load ends, and nothing while waiting.
func TestBenchBoardPipe(t *testing.T) {
	var w bytes.Buffer
	waiting := NewBenchBoard(&w, false, nil, 0)
	waiting.Waiting("bench: waiting…")
	waiting.Close()
	b := NewBenchBoard(&w, false, []string{"gpu1", "gpu2"}, 64)
	b.Start()
	for i := range 64 {
		b.Progress("gpu1", i+1, 64)
		b.Progress("gpu2", i/2, 64)
	}
	b.End("gpu2", -1)
	b.End("gpu1", 64)
	b.End("gpu1", 64)
	if got, want := w.String(), "gpu2     31/64 requests\ngpu1     64/64 requests\n"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
}
