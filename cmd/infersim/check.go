package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bringup-dev/bringup/kernels/capturecheck"
)

// captureCheck is `infersim capture-check --mode MODE`, the stand-in of
// the kernel's capture check (kernels/capturecheck/capture_check.py) on
// test hosts, where there is no GPU to capture on: after
// INFERSIM_CHECK_SECONDS (default 1) it prints what the reference check
// printed on a real H100, word for word, and exits as it did: a mode in
// INFERSIM_UNSAFE_MODES (default validate) fails with PyTorch's
// "operation not permitted when stream is capturing" (exit 1); off and
// every other mode pass (exit 0).
func captureCheck(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("infersim capture-check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	mode := fs.String("mode", "", "the kernel's mode: off, validate, on")
	if err := fs.Parse(args); err != nil {
		return capturecheck.ExitCannotRun
	}
	if *mode == "" {
		fmt.Fprintln(stderr, "infersim capture-check: --mode is required")
		return capturecheck.ExitCannotRun
	}
	secs, err := strconv.ParseFloat(envOr(getenv, "INFERSIM_CHECK_SECONDS", "1"), 64)
	if err != nil || secs < 0 {
		fmt.Fprintf(stderr, "infersim capture-check: INFERSIM_CHECK_SECONDS: want seconds, got %q\n", getenv("INFERSIM_CHECK_SECONDS"))
		return capturecheck.ExitCannotRun
	}
	select {
	case <-time.After(time.Duration(secs * float64(time.Second))):
	case <-ctx.Done():
		return capturecheck.ExitCannotRun
	}
	text, code := checkOutput(*mode, strings.Split(envOr(getenv, "INFERSIM_UNSAFE_MODES", "validate"), ","))
	fmt.Fprint(stdout, text)
	return code
}

// checkOutput is the real output the check of mode gave, and its exit
// status.
func checkOutput(mode string, unsafe []string) (string, int) {
	switch {
	case slices.Contains(unsafe, mode):
		return capturecheck.FailedValidate, capturecheck.ExitFailed
	case mode == "off":
		return capturecheck.PassedOff, capturecheck.ExitPassed
	}
	return capturecheck.PassedOn, capturecheck.ExitPassed
}
