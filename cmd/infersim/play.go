package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/bringup-dev/bringup/remote/sim/sglang"
)

// engine is what differs between the servers infersim stands in for: their
// command line, their log text, their HTTP routes. The timing is shared:
// every engine lays its lines over the one startup timeline that
// remote/sim/sglang computes (phase marks, shard times, failure moments,
// exit, GPU readings), so the two engines differ only in their texts.
type engine interface {
	// parse reads the engine's own arguments into p (fs already holds
	// infersim's common flags).
	parse(fs *flag.FlagSet, args []string, p *sglang.Params) error
	// play lays the engine's startup lines over the timeline.
	play(timeline *sglang.Script) *play
	// bindFailed is what the engine writes when its port cannot be bound;
	// the process then exits with status 1.
	bindFailed(p sglang.Params, err error) []line
	// stopped is what the engine writes on SIGTERM.
	stopped(p sglang.Params, listening bool) []line
	// uvicorn is one line of uvicorn's own logger (level INFO, ERROR), or
	// of its access logger, which writes to stdout.
	uvicorn(p sglang.Params, level, msg string, access bool) line
	// routes adds the engine's HTTP endpoints to s.
	routes(s *server)
	// statsLine is the engine's periodic stats line for the load b.
	statsLine(p sglang.Params, b sglang.Batch) line
}

// line is one thing an engine's startup does at At after the process
// started: write a line, or (text nil) act on the HTTP port.
type line struct {
	At time.Duration
	// text renders the line as the process writes it at t: prefix, and a
	// tqdm refresh's leading "\r", included; the newline not.
	text func(t time.Time) string
	// stdout sends the line to stdout instead of stderr.
	stdout bool
	// partial leaves the line open: a tqdm bar that refreshes in place
	// writes its newline only when it closes.
	partial bool
	// bind binds the HTTP port (without listening yet); listen starts
	// accepting connections on it; ready turns /health to 200 after the
	// line is written.
	bind, listen, ready bool
}

// play is one startup as infersim plays it.
type play struct {
	lines []line // in order of At
	// exit is when the process exits on its own (sglang.Never: it runs
	// until stopped), with exitCode.
	exit     time.Duration
	exitCode int
}

// logWriter writes an engine's lines to stdout and stderr, each with one
// write so that nothing sits in a buffer when the process dies.
type logWriter struct {
	mu             sync.Mutex
	stdout, stderr io.Writer
}

// write writes l as the process writes it at t.
func (w *logWriter) write(l line, t time.Time) {
	if l.text == nil {
		return
	}
	s := l.text(t)
	if !l.partial {
		s += "\n"
	}
	out := w.stderr
	if l.stdout {
		out = w.stdout
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	_, _ = io.WriteString(out, s) // as a print: a closed stdout has no one to tell
}

// writeAll writes lines at t.
func (w *logWriter) writeAll(lines []line, t time.Time) {
	for _, l := range lines {
		w.write(l, t)
	}
}

// sglangEngine plays SGLang: its lines are the timeline's own.
type sglangEngine struct{}

func (sglangEngine) parse(fs *flag.FlagSet, args []string, p *sglang.Params) error {
	fs.StringVar(&p.ModelPath, "model-path", "/models/demo", "model directory")
	fs.IntVar(&p.Port, "port", 30000, "HTTP port")
	fs.IntVar(&p.TP, "tp", 1, "tensor parallel size")
	fs.IntVar(&p.TP, "tp-size", 1, "tensor parallel size")
	fs.StringVar(&p.Host, "host", "0.0.0.0", "address to listen on")
	fs.BoolVar(&p.DisableCUDAGraph, "disable-cuda-graph", false, "skip graph capture")
	fs.IntVar(&p.NNodes, "nnodes", 1, "nodes of a multi-node deployment")
	fs.IntVar(&p.NodeRank, "node-rank", 0, "this node's rank (0: the one the others meet)")
	fs.StringVar(&p.DistInitAddr, "dist-init-addr", "", "HOST:PORT where the nodes meet (rank 0 listens on the port)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if p.NNodes > 1 && (p.DistInitAddr == "" || p.NodeRank < 0 || p.NodeRank >= p.NNodes) {
		return fmt.Errorf("--nnodes %d wants --dist-init-addr HOST:PORT and a --node-rank below it", p.NNodes)
	}
	return nil
}

// play binds and listens where uvicorn reports it runs, and is ready at
// "fired up".
func (sglangEngine) play(s *sglang.Script) *play {
	pl := &play{exit: s.Exit, exitCode: s.ExitCode}
	for _, l := range s.Lines {
		if l.At == s.Marks.Listening && strings.Contains(l.Text, "Uvicorn running on") {
			pl.lines = append(pl.lines, line{At: l.At, bind: true}, line{At: l.At, listen: true})
		}
		pl.lines = append(pl.lines, line{
			At: l.At, partial: l.Partial,
			ready: l.At == s.Marks.Ready && strings.Contains(l.Text, "fired up"),
			text: func(t time.Time) string {
				if l.Bar {
					return "\r" + l.Render(t)
				}
				return l.Render(t)
			},
		})
	}
	return pl
}

// bindFailed is uvicorn's report of a failed bind, which SGLang meets only
// after the model has loaded.
func (e sglangEngine) bindFailed(p sglang.Params, err error) []line {
	return []line{
		e.uvicorn(p, "ERROR", bindError(p.Host, p.Port, err), false),
		e.uvicorn(p, "INFO", "Waiting for application shutdown.", false),
		e.uvicorn(p, "INFO", "Application shutdown complete.", false),
	}
}

func (sglangEngine) stopped(sglang.Params, bool) []line {
	return []line{sglangMain("SIGTERM received. signum=None frame=None. Draining requests and shutting down...")}
}

// uvicorn lines go through SGLang's logger, with its prefix.
func (sglangEngine) uvicorn(_ sglang.Params, level, msg string, access bool) line {
	l := sglangMain(sglang.Uvicorn(level, msg))
	l.stdout = access
	return l
}

// statsLine is SGLang's decode stats line, printed by the first rank.
func (sglangEngine) statsLine(_ sglang.Params, b sglang.Batch) line {
	l := sglang.Line{Prefix: sglang.PrefixLogger, Tag: " TP0", Text: sglang.DecodeLine(b)}
	return line{text: l.Render}
}

// sglangMain is an untagged line of SGLang's main process.
func sglangMain(text string) line {
	l := sglang.Line{Prefix: sglang.PrefixLogger, Text: text}
	return line{text: l.Render}
}
