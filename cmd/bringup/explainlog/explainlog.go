// Package explainlog is `bringup explain`: it diagnoses saved logs
// offline with the console's own phase engine. One log is explained as
// it always was; several (a file per node, or one journal that several
// hosts wrote) are explained each, and the nodes of a multi-node
// deployment are judged together: the node that failed first, by its
// log's own times, is blamed, the others lost their peer.
package explainlog

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/bringup-dev/bringup/cmd/bringup/cli"
	"github.com/bringup-dev/bringup/cmd/bringup/config"
	"github.com/bringup-dev/bringup/cmd/bringup/output"
	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote/deployment"
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/logfile"
	"github.com/bringup-dev/bringup/remote/sanitize"
	"github.com/bringup-dev/bringup/remote/startup"
)

// Exit codes of `bringup explain`.
const (
	Served    = 0
	Failed    = 1
	Undecided = 2
)

// Usage is the command's usage line.
const Usage = "bringup explain [--json] [--engine sglang|vllm|auto] [--rules FILE]... [--deployment NAME] [FILE|-]..."

// Streams are the command's standard streams; In is nil when the
// command may not read it.
type Streams struct {
	In       io.Reader
	Out, Err io.Writer
}

func fail(s Streams, format string, a ...any) int {
	_, _ = io.WriteString(s.Err, "bringup explain: "+sanitize.Text(fmt.Sprintf(format, a...))+"\n")
	return cli.ExitUsage
}

func interruptedOr(ctx context.Context, s Streams, format string, a ...any) int {
	if cli.WasInterrupted(ctx) {
		return cli.ExitInterrupted
	}
	return fail(s, format, a...)
}

// Command runs `bringup explain` on args. A log is read as a stream
// (memory bounded by what it says, not by its length), and ctrl-c or
// SIGTERM ends the read at once.
func Command(ctx context.Context, s Streams, args []string) int {
	fs := cli.NewFlags(s.Out, s.Err, "explain", Usage)
	asJSON := fs.Bool("json", false, "print watch's JSON lines, then a summary line")
	engine := fs.String("engine", "auto", "the `ENGINE` that wrote the log: sglang, vllm or auto")
	rules := fs.StringArray("rules", nil, "a YAML rule pack `FILE` to try with the built-in packs (repeatable)")
	depName := fs.String("deployment", "", "the logs are the nodes of one deployment called `NAME` (else their server_args or command lines say)")
	if code, stop := cli.ParseArgs(fs, args); stop {
		return code
	}
	switch *engine {
	case "auto", "sglang", "vllm":
	default:
		return fail(s, "--engine %q: want sglang, vllm or auto", *engine)
	}
	opts := defaultOptions()
	opts.Engine = *engine
	if len(*rules) > 0 {
		var user []startup.RulePack
		for _, r := range *rules {
			packs, err := cli.Until(ctx, func() ([]startup.RulePack, error) { return config.ReadRules(r) })
			if err != nil {
				return interruptedOr(ctx, s, "--rules: %v", err)
			}
			user = append(user, packs...)
		}
		opts.Packs = startup.WithBuiltins(user)
	}
	names := fs.Args()
	if len(names) == 0 {
		names = []string{"-"}
	}
	stdinAsked := 0
	for _, n := range names {
		if n == "-" {
			stdinAsked++
		}
	}
	if stdinAsked > 1 {
		return fail(s, "stdin (-) named %d times: it is one log", stdinAsked)
	}
	if stdinAsked > 0 && (s.In == nil || fs.NArg() == 0 && cli.IsTerminal(s.In)) {
		// `bringup explain` alone at a prompt would wait for a paste
		// with no word of it: say what it wants instead.
		return fail(s, "name a log FILE, or pipe one in (journalctl -u UNIT | bringup explain -)")
	}
	var nodes []Node
	for _, name := range names {
		got, err := cli.Until(ctx, func() ([]Node, error) { return readLog(s.In, name, opts, *asJSON) })
		if err != nil {
			return interruptedOr(ctx, s, "%v", err)
		}
		nodes = append(nodes, got...)
	}
	if len(nodes) == 1 {
		n := nodes[0]
		code := exitOf(n.X.Outcome)
		if *asJSON {
			output.ExplainJSON(s.Out, n.X, n.Sum, code, n.Notes)
		} else {
			output.Explain(s.Out, n.Name, n.X, n.Sum, n.Notes)
		}
		return code
	}
	deps := Deployments(nodes, *depName)
	code := Served
	for _, n := range nodes {
		code = worse(code, exitOf(n.X.Outcome))
	}
	if *asJSON {
		printJSON(s.Out, nodes, deps, code)
	} else {
		printText(s.Out, nodes, deps)
	}
	return code
}

// Node is one host's log, explained.
type Node struct {
	// Name is the file's, or in a journal several hosts wrote, the host's.
	Name  string
	X     startup.Explanation
	Sum   logfile.Summary
	Notes *output.ExplainNotes
	// Role is what the log says of its node's place in a deployment
	// (HasRole: it says).
	Role    deployment.Role
	HasRole bool
}

// readLog explains the log name ("-": in), a node per host it holds.
func readLog(in io.Reader, name string, opts startup.Options, withChanges bool) ([]Node, error) {
	logName := "stdin"
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		in, logName = f, name
	}
	type result struct {
		n   Node
		err error
	}
	var results []chan result
	start := func() *io.PipeWriter {
		r, w := io.Pipe()
		done := make(chan result, 1)
		results = append(results, done)
		go func() {
			n, err := explainOne(r, logName, opts, withChanges)
			r.CloseWithError(err) // a writer blocked on this part stops
			done <- result{n, err}
		}()
		return w
	}
	whole := start()
	parts, interleaved, err := split(in, logName, whole, start)
	var nodes []Node
	for i, done := range results {
		r := <-done
		if err == nil && r.err != nil && (i == 0 || interleaved) {
			err = r.err
		}
		switch {
		case i == 0 && !interleaved:
			r.n.Name = logName
			nodes = append(nodes, r.n)
		case i > 0 && interleaved:
			r.n.Name = parts[i-1].host
			nodes = append(nodes, r.n)
		}
	}
	if err != nil {
		return nil, err
	}
	for _, n := range nodes {
		if n.Sum.Lines == 0 {
			return nil, fmt.Errorf("%s holds no log lines", n.Name)
		}
	}
	if len(nodes) == 0 {
		return nil, fmt.Errorf("%s holds no log lines", logName)
	}
	return nodes, nil
}

// explainOne runs the phase engine over one host's lines.
func explainOne(r io.Reader, logName string, opts startup.Options, withChanges bool) (Node, error) {
	x, notes := startup.NewExplainer(opts, withChanges), output.NewExplainNotes()
	var n Node
	sum, err := logfile.ScanLines(r, logName, logfile.Options{Host: "log", Year: time.Now().Year()}, func(ev event.Event, l logfile.Line) error {
		notes.See(ev, l, x.Add(ev))
		if !n.HasRole && ev.Journal != nil {
			n.Role, n.HasRole = deployment.FromLogLine(ev.Journal.Message)
		}
		return nil
	})
	n.X, n.Sum, n.Notes = x.Finish(), sum, notes
	return n, err
}

func exitOf(o startup.Outcome) int {
	switch o {
	case startup.OutcomeServed:
		return Served
	case startup.OutcomeFailed:
		return Failed
	case startup.OutcomeUndecided:
	}
	return Undecided // undecided, or an outcome this build does not know
}

// worse is the exit code of two logs together: failed over undecided
// over served.
func worse(a, b int) int {
	rank := map[int]int{Served: 0, Undecided: 1, Failed: 2}
	if rank[b] > rank[a] {
		return b
	}
	return a
}

// defaultOptions are the phase engine's options without flags.
func defaultOptions() startup.Options {
	return startup.Options{Engine: "auto", Kernels: kernels.DefaultCatalog()}
}
