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

	"bringup/remote/sim/sglang"
)

// config is everything a run of the server needs, read from flags and
// the environment.
type config struct {
	host     string
	params   sglang.Params
	stateDir string
}

// parseConfig reads the command line and the environment (through getenv,
// so tests need not touch the process environment).
func parseConfig(args []string, getenv func(string) string) (config, error) {
	fs := flag.NewFlagSet("infersim", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	p := sglang.Defaults()
	fs.StringVar(&p.ModelPath, "model-path", "/models/demo", "model directory")
	fs.IntVar(&p.Port, "port", 30000, "HTTP port")
	fs.IntVar(&p.TP, "tp", 1, "tensor parallel size")
	fs.IntVar(&p.TP, "tp-size", 1, "tensor parallel size")
	fs.StringVar(&p.Host, "host", "0.0.0.0", "address to listen on")
	fs.BoolVar(&p.DisableCUDAGraph, "disable-cuda-graph", false, "skip graph capture")
	kernelEnv := fs.String("kernel-env", envOr(getenv, "INFERSIM_KERNEL_ENV", "KDTREE_MODE"), "variable that selects the kernel mode")
	if err := fs.Parse(args); err != nil {
		return config{}, fmt.Errorf("parse arguments: %w", err)
	}
	if e := envOr(getenv, "INFERSIM_ENGINE", "sglang"); e != "sglang" {
		return config{}, fmt.Errorf("INFERSIM_ENGINE=%s: only sglang is simulated", e)
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
	return config{host: p.Host, params: p, stateDir: envOr(getenv, "INFERSIM_STATE_DIR", "/run/infersim")}, nil
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
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	h := sha256.New()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "__pycache__" {
			// Byte-code caches Python writes at import are not part of
			// the deployed build (kernels/deploy leaves them out too).
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
