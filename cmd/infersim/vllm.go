package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/bringup-dev/bringup/remote/sim/sglang"
	"github.com/bringup-dev/bringup/remote/sim/vllm"
)

// vllmEngine plays vLLM's OpenAI server (`vllm serve MODEL ...`); its
// texts come from remote/sim/vllm.
type vllmEngine struct {
	// args are what the command line said that the log shows.
	args vllm.Args
}

// parse reads vLLM's arguments: an optional `serve`, the model as a
// positional argument or --model, --port (8000 by default, as vLLM's),
// --host, --tensor-parallel-size (-tp), --enforce-eager and
// --gpu-memory-utilization.
func (e *vllmEngine) parse(fs *flag.FlagSet, args []string, p *sglang.Params) error {
	p.Host = ""
	fs.StringVar(&p.ModelPath, "model", "/models/demo", "model directory")
	fs.IntVar(&p.Port, "port", 8000, "HTTP port")
	fs.StringVar(&p.Host, "host", "", "address to listen on (all when empty)")
	fs.IntVar(&p.TP, "tensor-parallel-size", 1, "tensor parallel size")
	fs.IntVar(&p.TP, "tp", 1, "tensor parallel size")
	fs.BoolVar(&p.DisableCUDAGraph, "enforce-eager", false, "run eagerly: no torch.compile, no CUDA graphs")
	fs.Float64Var(&e.args.GPUMemory, "gpu-memory-utilization", 0.9, "fraction of GPU memory for the engine")
	// flag stops at the first positional argument; vLLM's argparse takes
	// them anywhere.
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return err
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(pos) > 0 && pos[0] == "serve" {
		pos = pos[1:]
	}
	switch len(pos) {
	case 0:
	case 1:
		e.args.ModelTag = pos[0]
		p.ModelPath = pos[0]
	default:
		return fmt.Errorf("unrecognized arguments: %s", strings.Join(pos[1:], " "))
	}
	e.args.Set = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { e.args.Set[f.Name] = true })
	return nil
}

// play lays vLLM's startup over the timeline.
func (e *vllmEngine) play(s *sglang.Script) *play {
	st := vllm.Play(s, e.args)
	return &play{lines: fromVLLM(st.Lines...), exit: st.Exit, exitCode: st.ExitCode}
}

// fromVLLM converts vLLM's lines to the lines infersim writes.
func fromVLLM(ls ...vllm.Line) []line {
	out := make([]line, len(ls))
	for i, l := range ls {
		out[i] = line{At: l.At, text: l.Text, stdout: l.Stdout, partial: l.Partial, bind: l.Bind, listen: l.Listen, ready: l.Ready}
	}
	return out
}

// bindFailed is the API server's early bind failing: Python's traceback of
// the OSError, before any engine process exists.
func (e *vllmEngine) bindFailed(p sglang.Params, err error) []line {
	return fromVLLM(vllm.BindFailed(p, err)...)
}

// stopped: uvicorn shuts down when it serves; before that the API server
// goes quietly.
func (e *vllmEngine) stopped(p sglang.Params, listening bool) []line {
	return fromVLLM(vllm.Stopped(p, listening)...)
}

// uvicorn lines carry the API server's prefix.
func (e *vllmEngine) uvicorn(p sglang.Params, level, msg string, access bool) line {
	return fromVLLM(vllm.Uvicorn(p, level, msg, access))[0]
}

// routes are vLLM's endpoints that matter for readiness and a smoke test.
// The server listens only once the engine is ready, so /health is 200 from
// its first answer.
func (e *vllmEngine) routes(s *server) {
	s.badRequest = func(msg string) string {
		b, _ := json.Marshal(map[string]any{"object": "error", "message": msg, "type": "Bad Request", "param": nil, "code": 400})
		return string(b)
	}
	s.mux.HandleFunc("GET /health", s.health)
	s.mux.HandleFunc("GET /ping", s.health)
	s.mux.HandleFunc("GET /version", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]string{"version": vllm.Version})
	})
	s.mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		now := time.Now().Unix()
		writeJSON(w, map[string]any{"object": "list", "data": []map[string]any{{
			"id": s.model, "object": "model", "created": now, "owned_by": "vllm", "root": s.model, "parent": nil, "max_model_len": sglang.ContextLen,
			"permission": []map[string]any{{
				"id": fmt.Sprintf("modelperm-%032x", s.nextID.Add(1)), "object": "model_permission", "created": now,
				"allow_create_engine": false, "allow_sampling": true, "allow_logprobs": true, "allow_search_indices": false,
				"allow_view": true, "allow_fine_tuning": false, "organization": "*", "group": nil, "is_blocking": false,
			}},
		}}})
	})
	s.mux.HandleFunc("POST /v1/completions", func(w http.ResponseWriter, r *http.Request) {
		s.complete(w, r, fmt.Sprintf("cmpl-%032x", s.nextID.Add(1)),
			map[string]any{"stop_reason": nil, "prompt_logprobs": nil, "token_ids": nil, "prompt_token_ids": nil},
			map[string]any{"service_tier": nil, "system_fingerprint": nil, "kv_transfer_params": nil})
	})
}

// statsLine is vLLM V1's stats record, logged by the API server.
func (e *vllmEngine) statsLine(p sglang.Params, b sglang.Batch) line {
	return line{stdout: true, text: func(t time.Time) string { return vllm.StatsLine(p, b, t) }}
}
