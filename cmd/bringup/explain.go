package main

import (
	"context"
	"os"
	"time"

	"github.com/bringup-dev/bringup/cmd/bringup/cli"
	"github.com/bringup-dev/bringup/cmd/bringup/config"
	"github.com/bringup-dev/bringup/cmd/bringup/output"
	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/logfile"
	"github.com/bringup-dev/bringup/remote/startup"
)

// Exit codes of `bringup explain`.
const (
	explainServed    = 0
	explainFailed    = 1
	explainUndecided = 2
)

// runExplain diagnoses a saved log offline with the console's own phase
// engine: a paste from a ticket, `journalctl -u UNIT` output (short,
// short-iso, short-precise, cat or json), or a file of engine output. The
// log is read as a stream (memory bounded by what it says, not by its
// length), and ctrl-c or SIGTERM ends the read at once.
func runExplain(ctx context.Context, e env, args []string) int {
	usageLine := "bringup explain [--json] [--engine sglang|vllm|auto] [--rules FILE]... [FILE|-]"
	fs := cli.NewFlags(e.stdout, e.stderr, "explain", usageLine)
	asJSON := fs.Bool("json", false, "print watch's JSON lines, then a summary line")
	engine := fs.String("engine", "auto", "the `ENGINE` that wrote the log: sglang, vllm or auto")
	rules := fs.StringArray("rules", nil, "a YAML rule pack `FILE` to try with the built-in packs (repeatable)")
	if code, stop := cli.ParseArgs(fs, args); stop {
		return code
	}
	if fs.NArg() > 1 {
		return e.fail("explain", "one log at a time (got %d)", fs.NArg())
	}
	switch *engine {
	case "auto", "sglang", "vllm":
	default:
		return e.fail("explain", "--engine %q: want sglang, vllm or auto", *engine)
	}
	opts := startup.Options{Engine: *engine, Kernels: kernels.DefaultCatalog()}
	if len(*rules) > 0 {
		var user []startup.RulePack
		for _, r := range *rules {
			packs, err := cli.Until(ctx, func() ([]startup.RulePack, error) { return config.ReadRules(r) })
			if err != nil {
				return e.interruptedOr(ctx, "explain", "--rules: %v", err)
			}
			user = append(user, packs...)
		}
		opts.Packs = startup.WithBuiltins(user)
	}
	name := fs.Arg(0)
	if (name == "" || name == "-") && (e.stdin == nil || fs.NArg() == 0 && cli.IsTerminal(e.stdin)) {
		// `bringup explain` alone at a prompt would wait for a paste
		// with no word of it: say what it wants instead.
		return e.fail("explain", "name a log FILE, or pipe one in (journalctl -u UNIT | bringup explain -)")
	}
	type explained struct {
		x       startup.Explanation
		sum     logfile.Summary
		logName string
		notes   *output.ExplainNotes
	}
	r, err := cli.Until(ctx, func() (explained, error) {
		in, logName := e.stdin, "stdin"
		if name != "" && name != "-" {
			f, err := os.Open(name)
			if err != nil {
				return explained{}, err
			}
			defer f.Close()
			in, logName = f, name
		}
		x, notes := startup.NewExplainer(opts, *asJSON), output.NewExplainNotes()
		sum, err := logfile.ScanLines(in, logName, logfile.Options{Host: "log", Year: time.Now().Year()}, func(ev event.Event, l logfile.Line) error {
			notes.See(ev, l, x.Add(ev))
			return nil
		})
		return explained{x: x.Finish(), sum: sum, logName: logName, notes: notes}, err
	})
	if err != nil {
		return e.interruptedOr(ctx, "explain", "%v", err)
	}
	if r.sum.Lines == 0 {
		return e.fail("explain", "%s holds no log lines", r.logName)
	}
	code := explainUndecided // for an outcome this build does not know
	switch r.x.Outcome {
	case startup.OutcomeServed:
		code = explainServed
	case startup.OutcomeFailed:
		code = explainFailed
	case startup.OutcomeUndecided:
		code = explainUndecided
	}
	if *asJSON {
		output.ExplainJSON(e.stdout, r.x, r.sum, code, r.notes)
	} else {
		output.Explain(e.stdout, r.logName, r.x, r.sum, r.notes)
	}
	return code
}
