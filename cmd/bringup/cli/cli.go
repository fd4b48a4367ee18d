// Package cli holds bringup's command-line conventions, the same for every
// subcommand: flags may come before, among or after the host names, usage
// goes to the command's error stream, nothing exits the process.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// NewFlags returns a flag set for command name that prints its usage
// (usageLine, then the flags) to w and never exits the process.
func NewFlags(w io.Writer, name, usageLine string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(w)
	fs.Usage = func() {
		fmt.Fprintf(w, "Usage: %s\n\nFlags:\n", usageLine)
		fs.PrintDefaults()
	}
	return fs
}

// Parse parses args, which must be flags only, and returns the exit code
// to stop with, if any.
func Parse(fs *flag.FlagSet, args []string) (int, bool) {
	if code, stop := ParseArgs(fs, args); stop {
		return code, true
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(fs.Output(), "%s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
		return ExitUsage, true
	}
	return 0, false
}

// ParseArgs parses flags that may be followed by positional arguments
// (host and group names), and flags after them too, as people type them.
func ParseArgs(fs *flag.FlagSet, args []string) (int, bool) {
	var positional []string
	for {
		err := fs.Parse(args)
		switch {
		case errors.Is(err, flag.ErrHelp):
			return 0, true
		case err != nil:
			return ExitUsage, true
		}
		if fs.NArg() == 0 {
			break
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
	// Leave the positional arguments where fs.Args finds them.
	_ = fs.Parse(append([]string{"--"}, positional...))
	return 0, false
}

// Given reports whether the flag name was given on the command line.
func Given(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// Strings collects a repeatable flag.
type Strings []string

func (s *Strings) String() string { return strings.Join(*s, ",") }

// Set adds one value.
func (s *Strings) Set(v string) error { *s = append(*s, v); return nil }
