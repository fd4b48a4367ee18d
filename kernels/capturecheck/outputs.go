// Package capturecheck holds the reference capture check of the
// seed-shaped kernel (capture_check.py, run on a GPU host before a
// restart) and what it printed on a real H100 (testdata, with the
// command that made it): the texts the stand-ins of test hosts print,
// so that a test host's check fails with PyTorch's own words.
package capturecheck

import _ "embed"

// What capture_check.py printed on an NVIDIA H100 80GB HBM3 (torch
// 2.11.0+cu130), kept exactly: validate failed (exit 1) with PyTorch's
// "operation not permitted when stream is capturing" from the kernel's
// .max().item(); on and off passed (exit 0).
var (
	//go:embed testdata/capture-validate.txt
	FailedValidate string
	//go:embed testdata/capture-on.txt
	PassedOn string
	//go:embed testdata/capture-off.txt
	PassedOff string
)

// Exit statuses of the reference check: a pass, a failed capture or
// replay, and a check that could not run (no CUDA, no torch).
const (
	ExitPassed    = 0
	ExitFailed    = 1
	ExitCannotRun = 2
)
