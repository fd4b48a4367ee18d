package output

import (
	"fmt"
	"io"
	"strings"
)

// Found is what `bringup init` found on one host: the inference unit it
// picked (Unit "" when none), the others it saw, or ConnErr, why the host
// was not reached. Every string is already sanitised (the unit's name and
// state are systemd's, the error quotes the SSH server).
type Found struct {
	Host    string
	Unit    string
	Engine  string
	Port    int
	State   string   // the unit's ActiveState
	Also    []string // the other inference units seen: "name (engine, state)"
	ConnErr string
}

// Outcome is the host's outcome in init's summary: found, none (reached,
// no sglang or vllm unit) or unreached.
func (f Found) Outcome() string {
	switch {
	case f.ConnErr != "":
		return "unreached"
	case f.Unit == "":
		return "none"
	}
	return "found"
}

// InitJSON prints f as a v1 line of kind found, and returns its outcome
// for the summary.
func InitJSON(w io.Writer, f Found) HostOutcome {
	l := Line{Kind: "found", Host: f.Host, Unit: f.Unit, Engine: f.Engine, State: f.State, Also: f.Also, ConnErr: f.ConnErr}
	if f.Port > 0 {
		port := f.Port
		l.Port = &port
	}
	emit(w, l)
	return HostOutcome{Host: f.Host, Outcome: f.Outcome()}
}

// InitSummary is init's summary line: outcome written (every host
// reached), failed (some were not: the config holds them with a note),
// interrupted or error (nothing written: err says why); config is the
// file written, "" when none.
func InitSummary(w io.Writer, outcome string, exit int, hosts []HostOutcome, config, err string) {
	emit(w, Line{Kind: "summary", Command: "init", Outcome: outcome, Exit: &exit, Hosts: hosts, Config: config, Err: err})
}

// Text is f as init's line for people: "sglang.service (sglang, port
// 30000, active); also vllm.service (vllm, inactive)", "no sglang or vllm
// unit found" or "not reached: …".
func (f Found) Text() string {
	switch f.Outcome() {
	case "unreached":
		return "not reached: " + f.ConnErr
	case "none":
		return "no sglang or vllm unit found"
	}
	line := fmt.Sprintf("%s (%s, port %d, %s)", f.Unit, f.Engine, f.Port, f.State)
	if len(f.Also) > 0 {
		line += "; also " + strings.Join(f.Also, ", ")
	}
	return line
}
