// Package cli holds bringup's command-line conventions, the same for every
// subcommand: GNU-style flags (--long, -s short forms, flags before, among
// or after the host names, -- ends them) through spf13/pflag; help asked
// for goes to standard output and exits 0, a usage error goes to standard
// error with exit 3 and a did-you-mean; nothing exits the process.
package cli

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"

	"github.com/spf13/pflag"
)

// FlagSet is the flag set every command parses with.
type FlagSet = pflag.FlagSet

// Flags is a command's flag set and where its help and errors go.
type Flags struct {
	*pflag.FlagSet
	out, errOut io.Writer
	usageLine   string
	help        *bool
}

// NewFlags returns the flag set of command name (as in "bringup NAME");
// help asked for (-h, --help) prints usageLine and the flags on out,
// errors go to errOut.
func NewFlags(out, errOut io.Writer, name, usageLine string) *Flags {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SetOutput(errOut)
	fs.SortFlags = false // in the order registered: the common ones first
	f := &Flags{FlagSet: fs, out: out, errOut: errOut, usageLine: usageLine}
	fs.Usage = func() {} // Parse prints, to the stream the case calls for
	return f
}

// PrintUsage writes the usage line and the flags to w.
func (f *Flags) PrintUsage(w io.Writer) {
	fmt.Fprintf(w, "Usage: %s\n\nFlags:\n%s", f.usageLine, f.FlagUsages())
}

// Parse parses args, which must be flags only, and returns the exit code
// to stop with, if any.
func Parse(f *Flags, args []string) (int, bool) {
	if code, stop := ParseArgs(f, args); stop {
		return code, true
	}
	if f.NArg() > 0 {
		return f.Usagef("unexpected argument %q", f.Arg(0)), true
	}
	return 0, false
}

// ParseArgs parses flags that may be followed by positional arguments
// (host and group names), and flags after them too, as people type them.
func ParseArgs(f *Flags, args []string) (int, bool) {
	if f.help == nil { // registered last, so that it is listed last
		f.help = f.BoolP("help", "h", false, "show this help")
	}
	err := f.Parse(args)
	var invalid *pflag.InvalidValueError
	var refused checkError
	switch {
	case errors.Is(err, pflag.ErrHelp) || err == nil && *f.help:
		f.PrintUsage(f.out)
		return ExitOK, true
	case errors.As(err, &invalid) && errors.As(err, &refused):
		return f.Usagef("--%s %s: %v", invalid.GetFlag().Name, printable(invalid.GetValue()), refused.error), true
	case err != nil:
		return f.Usagef("%s%s", err, f.flagHint(err, args)), true
	}
	return 0, false
}

// printable is a word the person typed as it is, or quoted where it holds
// what a terminal would act on.
func printable(s string) string {
	if strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 {
		return strconv.Quote(s)
	}
	return s
}

// Usagef reports a usage error of the command on its error stream, with
// where to read its flags, and returns ExitUsage.
func (f *Flags) Usagef(format string, a ...any) int {
	name := "bringup " + f.Name()
	if f.Name() == "bringup" {
		name = "bringup"
	}
	fmt.Fprintf(f.errOut, "%s: %s\nRun '%s --help' for its flags.\n", name, fmt.Sprintf(format, a...), name)
	return ExitUsage
}

// flagHint suggests the flag meant by an unknown one: Go's single-dash
// long form (-json for --json), or a near spelling (--jsno).
func (f *Flags) flagHint(err error, args []string) string {
	msg := err.Error()
	if !strings.Contains(msg, "unknown") {
		return ""
	}
	var names []string
	f.VisitAll(func(fl *pflag.Flag) { names = append(names, fl.Name) })
	for _, a := range args {
		if a == "--" {
			break
		}
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		switch {
		case strings.HasPrefix(a, "--") && strings.Contains(msg, "--"+name):
		case !strings.HasPrefix(a, "--") && len(name) > 1 && strings.HasPrefix(a, "-") && strings.Contains(msg, "shorthand"):
		default:
			continue
		}
		if f.Lookup(name) != nil {
			return fmt.Sprintf(" (long flags take two dashes: --%s)", name)
		}
		if s := Suggest(name, names); s != "" {
			return fmt.Sprintf(" (did you mean --%s?)", s)
		}
	}
	return ""
}

// Suggest returns the candidate nearest to word when it is near enough to
// be a typo (an edit distance of at most 2, and less than half the word),
// else "".
func Suggest(word string, candidates []string) string {
	best, bestD := "", 3
	for _, c := range candidates {
		if c == "" {
			continue
		}
		if d := distance(word, c); d < bestD && d*2 < max(len(word), len(c)) {
			best, bestD = c, d
		}
	}
	return best
}

// distance is the optimal string alignment distance (Levenshtein with
// adjacent transpositions, the commonest typo: wtach).
func distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
