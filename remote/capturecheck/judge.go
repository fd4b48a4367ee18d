// Package capturecheck judges what a kernel's capture check (the catalog's
// check command, run on a host before a restart) printed: a pass, or a
// failure read through the same diagnosis as an engine's log, so a check
// that dies of `.item()` during capture says graph-capture-host-sync with
// PyTorch's own line. Judge is pure; Run runs the checks through the
// hosts' drivers (the IO is theirs) and judges what they printed.
package capturecheck

import (
	"fmt"
	"strings"
	"time"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote"
	"github.com/bringup-dev/bringup/remote/logfile"
	"github.com/bringup-dev/bringup/remote/sanitize"
	"github.com/bringup-dev/bringup/remote/startup"
)

// ExitCannotRun is the exit code of a check that could not run (no CUDA,
// no torch, the kernel not found): it proves nothing either way.
const ExitCannotRun = 2

// Result is what running a check command gave.
type Result = remote.CheckOutput

// outOfMemory are the diagnosis's causes of a CUDA allocation that
// failed. A check that dies of one proves nothing of the mode: on a host
// whose engine serves, the engine holds the GPU's memory and the check's
// own tensors do not fit.
var outOfMemory = map[string]bool{"gpu-oom": true, "graph-capture-oom": true}

// CannotRun starts the detail of a check that could not run.
const CannotRun = "the check could not run: "

// Judge turns a check's result into evidence on k's mode. Exit 0 is a
// pass; ExitCannotRun, and a check that ran out of GPU memory (PyTorch's
// "CUDA out of memory", read through the diagnosis), count neither way
// (recorded as skipped, with why); a timeout or any other exit refuses,
// its detail the diagnosis's cause and root-cause line, else the last
// line printed.
func Judge(k kernels.Kernel, mode string, r Result) kernels.Evidence {
	ev := kernels.Evidence{Source: kernels.SourceCheck, Took: r.Took}
	last := lastLine(r.Output)
	switch {
	case r.TimedOut:
		ev.Detail = fmt.Sprintf("the check did not finish in %s", r.Took.Round(time.Second))
		if last != "" {
			ev.Detail += " (last line: " + last + ")"
		}
	case r.Exit == 0:
		ev.Safe, ev.Detail = true, cmpOr(last, "the check passed")
	case r.Exit == ExitCannotRun:
		ev.Skipped, ev.Detail = true, CannotRun+cmpOr(last, "exit 2")
	default:
		cause, detail := diagnose(k, mode, r)
		ev.Detail = detail
		if outOfMemory[cause] {
			ev.Skipped, ev.Detail = true, CannotRun+"the GPU ran out of memory (an engine serving on it holds its memory; check again while the unit is stopped, or --skip-check): "+detail
		}
	}
	return ev
}

// diagnose reads a failed check's output as a log: the diagnosis's cause
// ("" when it has none) and the detail to show.
func diagnose(k kernels.Kernel, mode string, r Result) (cause, detail string) {
	lg, err := logfile.Read(strings.NewReader(r.Output), "check", logfile.Options{Host: "check"})
	fallback := fmt.Sprintf("the check exited %d: %s", r.Exit, cmpOr(lastLine(r.Output), "no output"))
	if err != nil || len(lg.Events) == 0 {
		return "", fallback
	}
	x := startup.Explain(lg.Events, startup.Options{Kernels: kernels.Catalog{Kernels: []kernels.Kernel{k}}})
	d := x.Startup.Diag
	if d == nil || d.Cause == "" || d.Cause == "unrecognised" {
		return "", fallback
	}
	line := ""
	if len(d.Evidence) > 0 {
		line = ": " + sanitize.String(strings.TrimSpace(d.Evidence[0]))
	}
	return d.Cause, d.Cause + line
}

// lastLine is the last non-blank line of out, sanitised.
func lastLine(out string) string {
	lines := strings.Split(strings.TrimRight(out, "\r\n\t "), "\n")
	return sanitize.String(strings.TrimSpace(lines[len(lines)-1]))
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
