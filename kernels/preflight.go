package kernels

import (
	"fmt"
	"path"
	"strconv"
	"strings"
)

// The engines Preflight knows, and the flag each turns CUDA graphs off with.
const (
	EngineAuto   = "auto"
	EngineSGLang = "sglang"
	EngineVLLM   = "vllm"

	FlagSGLangNoGraphs = "--disable-cuda-graph"
	FlagVLLMNoGraphs   = "--enforce-eager"
)

// PreflightResult is the verdict on restarting a unit under a kernel mode.
type PreflightResult struct {
	// OK is true when the restart may go ahead: the mode is capture-safe,
	// or CUDA graphs are off in ExecStart.
	OK bool
	// Reason says why not (empty when OK).
	Reason string
	// SafeModes are the kernel's capture-safe modes, in the order to
	// offer them (see Kernel.SafeModes).
	SafeModes []string
	// Engine is the engine the verdict assumed: sglang, vllm, or "" when
	// ExecStart named neither.
	Engine string
	// GraphsOn is true when ExecStart leaves CUDA graphs enabled.
	GraphsOn bool
	// RefusedBy names the sources that refused the mode (PreflightWith):
	// the declaration, the lint, the check.
	RefusedBy []SafetySource
	// Evidence is what PreflightWith weighed beside the declaration.
	Evidence []Evidence
}

// Preflight checks, before a restart of a unit whose ExecStart is
// execStart, that kernel k in mode will survive CUDA graph capture. A mode
// that is not capture-safe fails at graph capture (about ten minutes into
// the startup) unless graphs are off: SGLang without --disable-cuda-graph,
// vLLM without --enforce-eager. engine is sglang, vllm, or auto/"" to
// detect it from execStart; an unknown engine counts as graphs on unless
// either flag is present. execStart may be an argv joined with spaces or
// systemctl show's "{ path=… ; argv[]=… ; … }" form.
func Preflight(k Kernel, mode, execStart, engine string) PreflightResult {
	res := PreflightResult{SafeModes: k.SafeModes()}
	m, ok := k.Mode(mode)
	if !ok {
		res.Reason = fmt.Sprintf("kernel %s has no mode %q (modes: %s)", k.Name, mode, strings.Join(k.ModeNames(), ", "))
		return res
	}
	args := execArgs(execStart)
	if engine == "" || engine == EngineAuto {
		engine = DetectEngine(args)
	}
	res.Engine = engine
	var flag string
	switch engine {
	case EngineSGLang:
		flag = FlagSGLangNoGraphs
		res.GraphsOn = !hasFlag(args, FlagSGLangNoGraphs)
	case EngineVLLM:
		flag = FlagVLLMNoGraphs
		res.GraphsOn = !hasFlag(args, FlagVLLMNoGraphs)
	default:
		flag = FlagSGLangNoGraphs + " or " + FlagVLLMNoGraphs
		res.GraphsOn = !hasFlag(args, FlagSGLangNoGraphs) && !hasFlag(args, FlagVLLMNoGraphs)
	}
	if m.CaptureSafe || !res.GraphsOn {
		res.OK = true
		return res
	}
	who := engine
	if who == "" {
		who = "the service (engine not recognised)"
	}
	res.Reason = fmt.Sprintf("%s=%s is not capture-safe and %s starts with CUDA graphs on (no %s in ExecStart): it will fail at graph capture, about ten minutes in",
		k.Name, mode, who, flag)
	return res
}

// DetectEngine names the engine an ExecStart argv runs: sglang for
// sglang.launch_server or `sglang serve`, vllm for `vllm serve` or
// vllm.entrypoints; for infersim (bringup's stand-in) the one its
// --engine names, sglang without it; "" otherwise.
func DetectEngine(args []string) string {
	for i, a := range args {
		base := path.Base(a)
		switch {
		case base == "infersim":
			return infersimEngine(args[i+1:])
		case strings.HasPrefix(base, "sglang"):
			return EngineSGLang
		case base == "vllm", strings.HasPrefix(base, "vllm."):
			return EngineVLLM
		}
	}
	return ""
}

// infersimEngine is the engine infersim's arguments select.
func infersimEngine(args []string) string {
	for i, a := range args {
		v, ok := strings.CutPrefix(a, "--engine=")
		if !ok && a == "--engine" && i+1 < len(args) {
			v, ok = args[i+1], true
		}
		if ok {
			switch v {
			case EngineSGLang, EngineVLLM:
				return v
			}
			return ""
		}
	}
	return EngineSGLang
}

// hasFlag reports whether the boolean flag is set in args: the plain flag,
// or flag=VALUE with a true VALUE.
func hasFlag(args []string, flag string) bool {
	on := false
	for _, a := range args {
		if a == flag {
			on = true
			continue
		}
		if v, ok := strings.CutPrefix(a, flag+"="); ok {
			b, err := strconv.ParseBool(v)
			on = err == nil && b
		}
	}
	return on
}

// execArgs splits an ExecStart rendering into its arguments, keeping only
// the argv[]= part of systemctl show's form.
func execArgs(execStart string) []string {
	s := execStart
	if i := strings.Index(s, "argv[]="); i >= 0 {
		s = s[i+len("argv[]="):]
		if j := strings.Index(s, " ; "); j >= 0 {
			s = s[:j]
		}
	}
	var out []string
	for f := range strings.FieldsSeq(s) {
		out = append(out, strings.Trim(f, `"'`))
	}
	return out
}

// OverrideConfirmed reports whether typed is the confirmation that lets a
// restart go on against a failed preflight: the number of hosts it will
// restart, so that nobody proceeds by reflex.
func OverrideConfirmed(typed string, hosts int) bool {
	n, err := strconv.Atoi(strings.TrimSpace(typed))
	return err == nil && hosts > 0 && n == hosts
}
