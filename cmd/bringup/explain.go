package main

import "github.com/bringup-dev/bringup/cmd/bringup/explainlog"

// Exit codes of `bringup explain`.
const (
	explainServed    = explainlog.Served
	explainFailed    = explainlog.Failed
	explainUndecided = explainlog.Undecided
)
