package main

import (
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bringup-dev/bringup/remote/sim/sglang"
)

// config is everything a run of the server needs, read from flags and
// the environment.
type config struct {
	host     string
	params   sglang.Params
	stateDir string
	engine   engine
	// flood is how many numbered lines a second the server writes once it
	// serves (INFERSIM_FLOOD; 0: none): load for soak tests, whose lines
	// the follower must deliver each once, in order.
	flood int
	// load is the background streams the engine decodes once serving
	// (INFERSIM_LOAD; 0: none, the engine is idle without clients);
	// stats is how often it prints its stats line while it decodes
	// (INFERSIM_STATS_SECONDS; SGLang 2 s, vLLM 10 s by default).
	load  int
	stats time.Duration
	// rendezvous bounds how long a node of a multi-node deployment waits
	// for the others to come (INFERSIM_RENDEZVOUS_SECONDS, default 60).
	rendezvous time.Duration
}

// engines are the servers infersim stands in for, by INFERSIM_ENGINE.
func engines() map[string]func() engine {
	return map[string]func() engine{
		"sglang": func() engine { return sglangEngine{} },
		"vllm":   func() engine { return &vllmEngine{} },
	}
}

// parseConfig reads the command line and the environment (through getenv,
// so tests need not touch the process environment). The engine comes from
// INFERSIM_ENGINE or --engine (sglang by default) and decides which
// arguments the rest of the command line may hold: each engine takes its
// own flags, as the real server would.
func parseConfig(args []string, getenv func(string) string) (config, error) {
	name, args := engineArg(args, envOr(getenv, "INFERSIM_ENGINE", "sglang"))
	newEngine, ok := engines()[name]
	if !ok {
		return config{}, fmt.Errorf("engine %q: infersim simulates sglang and vllm", name)
	}
	eng := newEngine()
	flags := flag.NewFlagSet("infersim", flag.ContinueOnError)
	flags.SetOutput(io.Discard)
	p := sglang.Defaults()
	var rendezvous time.Duration
	kernelEnv := flags.String("kernel-env", envOr(getenv, "INFERSIM_KERNEL_ENV", "KDTREE_MODE"), "variable that selects the kernel mode")
	if err := eng.parse(flags, args, &p); err != nil {
		return config{}, fmt.Errorf("parse %s arguments: %w", name, err)
	}
	// Short defaults: a full startup in about a minute unless told otherwise.
	durs := []struct {
		env string
		dst *time.Duration
		def float64
	}{
		{"INFERSIM_BOOT_SECONDS", &p.Boot, 1}, {"INFERSIM_INIT_SECONDS", &p.Init, 3},
		{"INFERSIM_WEIGHTS_SECONDS", &p.Weights, 30}, {"INFERSIM_KV_SECONDS", &p.KV, 2},
		{"INFERSIM_CAPTURE_SECONDS", &p.Capture, 10}, {"INFERSIM_HTTP_SECONDS", &p.HTTP, 1},
		{"INFERSIM_WARMUP_SECONDS", &p.Warmup, 2}, {"INFERSIM_NCCL_TIMEOUT_SECONDS", &p.NCCLTimeout, 60},
		{"INFERSIM_PEER_WAIT_SECONDS", &p.PeerWait, 2}, {"INFERSIM_RENDEZVOUS_SECONDS", &rendezvous, 60},
	}
	for _, d := range durs {
		secs := d.def
		if v := getenv(d.env); v != "" {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || f <= 0 {
				return config{}, fmt.Errorf("%s=%q: want a positive number of seconds", d.env, v)
			}
			secs = f
		}
		*d.dst = time.Duration(secs * float64(time.Second))
	}
	p.Shards = 8
	if v := getenv("INFERSIM_SHARDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return config{}, fmt.Errorf("INFERSIM_SHARDS=%q: want a positive integer", v)
		}
		p.Shards = n
	}
	f, err := sglang.ParseFailure(getenv("INFERSIM_FAIL"))
	if err != nil {
		return config{}, fmt.Errorf("INFERSIM_FAIL: %w", err)
	}
	p.Failure = f
	p.PID = os.Getpid()
	p.Seed = int64(p.PID)
	p.Kernel = kernelFromEnv(getenv, *kernelEnv)
	flood, err := strconv.Atoi(envOr(getenv, "INFERSIM_FLOOD", "0"))
	if err != nil || flood < 0 {
		return config{}, fmt.Errorf("INFERSIM_FLOOD %q: want a number of lines a second", getenv("INFERSIM_FLOOD"))
	}
	if p.Rates, err = sglang.ParseRates(getenv("INFERSIM_DECODE_TPS")); err != nil {
		return config{}, fmt.Errorf("INFERSIM_DECODE_TPS: %w", err)
	}
	load, err := strconv.Atoi(envOr(getenv, "INFERSIM_LOAD", "0"))
	if err != nil || load < 0 || load > maxBatch {
		return config{}, fmt.Errorf("INFERSIM_LOAD=%q: want a number of streams from 0 to %d", getenv("INFERSIM_LOAD"), maxBatch)
	}
	every := 2.0
	if name == "vllm" {
		every = 10
	}
	if v := getenv("INFERSIM_STATS_SECONDS"); v != "" {
		if every, err = strconv.ParseFloat(v, 64); err != nil || every <= 0 {
			return config{}, fmt.Errorf("INFERSIM_STATS_SECONDS=%q: want a positive number of seconds", v)
		}
	}
	return config{host: p.Host, params: p, stateDir: envOr(getenv, "INFERSIM_STATE_DIR", "/run/infersim"), engine: eng, flood: flood,
		load: load, stats: time.Duration(every * float64(time.Second)), rendezvous: rendezvous}, nil
}

// engineArg takes --engine NAME (or --engine=NAME) out of args; without
// it the engine is def.
func engineArg(args []string, def string) (string, []string) {
	name := def
	var rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case (a == "--engine" || a == "-engine") && i+1 < len(args):
			name = args[i+1]
			i++
		case strings.HasPrefix(a, "--engine="), strings.HasPrefix(a, "-engine="):
			_, name, _ = strings.Cut(a, "=")
		default:
			rest = append(rest, a)
		}
	}
	return name, rest
}

func envOr(getenv func(string) string, key, def string) string {
	if v := getenv(key); v != "" {
		return v
	}
	return def
}

// kernelFromEnv describes the kernel the process would load: its mode from
// the mode variable, its directory from the first PYTHONPATH entry and
// that directory's content hash. No PYTHONPATH, no kernel.
func kernelFromEnv(getenv func(string) string, modeVar string) sglang.Kernel {
	dir, _, _ := strings.Cut(getenv("PYTHONPATH"), ":")
	if dir == "" {
		return sglang.Kernel{}
	}
	mode := envOr(getenv, modeVar, "off")
	unsafe := strings.Split(envOr(getenv, "INFERSIM_UNSAFE_MODES", "validate"), ",")
	hash, err := dirHash(dir)
	if err != nil {
		hash = "unavailable (" + err.Error() + ")"
	}
	return sglang.Kernel{
		Name: envOr(getenv, "INFERSIM_KERNEL_NAME", "kdtree-verify"), Mode: mode,
		CaptureSafe: !slices.Contains(unsafe, mode), Path: dir, Hash: hash,
	}
}

// dirHash is the sha256 over a directory's regular files in path order,
// each as its slash path, a NUL, its length and content, so that a
// redeploy that changes any file (or its name) changes the hash.
func dirHash(dir string) (string, error) {
	// A release directory behind a symlink (site -> releases/v3) is the
	// build: WalkDir would not descend into a symlinked root.
	if resolved, err := filepath.EvalSymlinks(dir); err == nil {
		dir = resolved
	}
	h := sha256.New()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "__pycache__" {
			// Byte-code caches Python writes at import are not part of
			// the deployed build (kernels/bundle leaves them out too).
			return filepath.SkipDir
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", filepath.ToSlash(rel), len(b))
		h.Write(b)
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("hash %s: %w", dir, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
