package systemd

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/bringup-dev/bringup/kernels"
)

// InferenceUnit is a service on a host whose ExecStart runs an inference
// engine: what `bringup init` writes into a starter config.
type InferenceUnit struct {
	Name        string // the unit, e.g. sglang.service
	Engine      string // kernels.EngineSGLang or kernels.EngineVLLM
	ExecStart   string // the argv of its first ExecStart
	ActiveState string // active, inactive, failed, …
	// Port is the HTTP port the server listens on: its --port, else the
	// engine's default (SGLang 30000, vLLM 8000).
	Port int
}

// DiscoverCommand lists the host's services (loaded ones, and unit files
// that are not loaded: a stopped, disabled sglang.service is still the one
// to watch) and shows the id, ExecStart and state of each in one
// `systemctl show`. Template units (x@.service) have no ExecStart of their
// own and are left out. Nothing in it needs privileges.
const DiscoverCommand = `units=$({ systemctl list-units --type=service --all --no-legend --plain --no-pager; ` +
	`systemctl list-unit-files --type=service --no-legend --no-pager; } 2>/dev/null | ` +
	`awk '$1 ~ /\.service$/ && $1 !~ /@\.service$/ {print $1}' | sort -u); ` +
	`[ -n "$units" ] && exec systemctl show --no-pager -p Id -p ExecStart -p ActiveState -p LoadState -- $units`

// Discover finds the inference services on the host r runs commands on.
func Discover(ctx context.Context, r interface {
	Exec(ctx context.Context, cmd string) (stdout, stderr []byte, exitCode int, err error)
}, host string) ([]InferenceUnit, error) {
	out, errOut, code, err := r.Exec(ctx, DiscoverCommand)
	if err != nil {
		return nil, fmt.Errorf("%s: list services: %w", host, err)
	}
	if code != 0 && len(out) == 0 {
		if msg := strings.TrimSpace(string(errOut)); msg != "" {
			return nil, fmt.Errorf("%s: list services: exit %d: %s", host, code, firstLineOf(msg))
		}
		return nil, fmt.Errorf("%s: list services: exit %d and no services listed (is systemd running?)", host, code)
	}
	return ParseDiscover(out), nil
}

// ParseDiscover reads DiscoverCommand's output: blocks of KEY=VALUE lines,
// one per unit, separated by empty lines. It returns the units whose
// ExecStart runs SGLang or vLLM (or bringup's stand-in), by name.
func ParseDiscover(out []byte) []InferenceUnit {
	var found []InferenceUnit
	for block := range bytes.SplitSeq(out, []byte("\n\n")) {
		var u InferenceUnit
		load := ""
		for line := range strings.SplitSeq(string(block), "\n") {
			k, v, ok := strings.Cut(line, "=")
			if !ok {
				continue
			}
			switch k {
			case "Id":
				u.Name = v
			case "ExecStart":
				u.ExecStart = showArgv(v)
			case "ActiveState":
				u.ActiveState = v
			case "LoadState":
				load = v
			}
		}
		if u.Name == "" || u.ExecStart == "" || load == "not-found" || load == "masked" {
			continue
		}
		args := strings.Fields(u.ExecStart)
		if u.Engine = kernels.DetectEngine(args); u.Engine == "" {
			continue
		}
		u.Port = listenPort(args, u.Engine)
		found = append(found, u)
	}
	slices.SortFunc(found, func(a, b InferenceUnit) int { return strings.Compare(a.Name, b.Name) })
	return found
}

// listenPort is the --port of args, else engine's default port.
func listenPort(args []string, engine string) int {
	for i, a := range args {
		v, ok := strings.CutPrefix(a, "--port=")
		if !ok && a == "--port" && i+1 < len(args) {
			v, ok = args[i+1], true
		}
		if ok {
			if p, err := strconv.Atoi(v); err == nil && p > 0 && p < 65536 {
				return p
			}
		}
	}
	if engine == kernels.EngineVLLM {
		return 8000
	}
	return 30000
}

// firstLineOf is s up to its first newline.
func firstLineOf(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
