package testbed

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Sudo says what the host's deploy user may do with sudo.
type Sudo string

// The sudo settings. The zero value means the default: NOPASSWD on gpu1,
// none elsewhere, so that a fleet has one host of each kind.
const (
	SudoDefault  Sudo = ""
	SudoNoPasswd Sudo = "nopasswd" // deploy may run anything with sudo -n
	SudoNone     Sudo = "none"     // deploy is not in sudoers at all
)

// HostOptions are what may differ between hosts of one testbed.
type HostOptions struct {
	// Engine is the server infersim stands in for: EngineSGLang (the
	// default) or EngineVLLM. A vLLM host runs vllm.service (Unit) with
	// INFERSIM_ENGINE=vllm and vLLM's command line, `infersim serve
	// /models/demo --port 30000 --tensor-parallel-size 8`, still on
	// ServicePort; Args then take vLLM's flags (--enforce-eager).
	Engine string
	// KernelMode is KDTREE_MODE in the unit: off (default), validate, on.
	KernelMode string
	// Args are appended to infersim's command line, e.g. --disable-cuda-graph.
	Args []string
	// Env adds or overrides unit environment variables (the INFERSIM_*
	// phase lengths, INFERSIM_FAIL, ...).
	Env map[string]string
	// DeploySudo is the deploy user's sudo; see Sudo.
	DeploySudo Sudo
	// DeploySudoers, when set, is the whole of the deploy user's sudoers
	// file (/etc/sudoers.d/deploy), in place of what DeploySudo gives: a
	// test of least privilege puts exactly the rule it checks there.
	DeploySudoers string
	// Restart is the unit's Restart= (default "no"; "on-failure" for
	// crash-loop tests).
	Restart string
	// RestartSec is the unit's RestartSec= when it restarts (default
	// "1"), e.g. "2" or "200ms".
	RestartSec string
	// StartLimitBurst, when above 0, gives the unit systemd's start
	// limit: after that many starts within StartLimitInterval (default
	// "60") systemd refuses the next (start-limit-hit, "Start request
	// repeated too quickly") and the unit stays failed until
	// reset-failed. 0: no start limit, so that a test sees the loop.
	StartLimitBurst    int
	StartLimitInterval string
	// Enable starts the service (Unit) at boot. Off by default: tests start it
	// themselves to watch a startup from its first line.
	Enable bool
}

// The unit the hosts run, and where.
const (
	// UnitName is the service infersim runs as on SGLang hosts (the default).
	UnitName = "sglang.service"
	// VLLMUnitName is the service infersim runs as on vLLM hosts.
	VLLMUnitName = "vllm.service"
	// ServicePort is infersim's HTTP port (SGLang's default).
	ServicePort = 30000
	// HealthPath answers 200 once the server is ready.
	HealthPath = "/health"
	// KernelPythonPath is the kernel's extension directory on PYTHONPATH.
	KernelPythonPath = "/opt/kdtree/site"
	// StandInCheck is the capture check command of the kernel on test
	// hosts (a catalog's check:): infersim's stand-in, which prints what
	// the reference check printed on a real GPU.
	StandInCheck = "infersim capture-check --mode {mode}"
	// ModelPath is the model directory infersim is pointed at.
	ModelPath = "/models/demo"
)

// The engines infersim stands in for (HostOptions.Engine).
const (
	EngineSGLang = "sglang"
	EngineVLLM   = "vllm"
)

// engine is o's engine, SGLang when unset.
func (o HostOptions) engine() string {
	if o.Engine == "" {
		return EngineSGLang
	}
	return o.Engine
}

// Unit is the service a host with options o runs infersim as:
// sglang.service, or vllm.service for a vLLM host.
func (o HostOptions) Unit() string {
	if o.engine() == EngineVLLM {
		return VLLMUnitName
	}
	return UnitName
}

// defaultEnv keeps a startup short (about 10 s) while every phase still
// shows: tests wait for real transitions, not for a real model to load.
func defaultEnv() map[string]string {
	return map[string]string{
		"PYTHONUNBUFFERED":         "1",
		"PYTHONPATH":               KernelPythonPath,
		"KDTREE_MODE":              "off",
		"INFERSIM_BOOT_SECONDS":    "1",
		"INFERSIM_HTTP_SECONDS":    "1",
		"INFERSIM_WEIGHTS_SECONDS": "4",
		"INFERSIM_CAPTURE_SECONDS": "2",
		"INFERSIM_INIT_SECONDS":    "1",
		"INFERSIM_KV_SECONDS":      "1",
		"INFERSIM_WARMUP_SECONDS":  "1",
	}
}

// unitFile renders the service (Unit) for o.
func unitFile(o HostOptions) (string, error) {
	env := defaultEnv()
	args := []string{"/usr/local/bin/infersim", "--model-path", ModelPath, "--port", fmt.Sprint(ServicePort), "--tp", "8"}
	server := "SGLang"
	switch o.engine() {
	case EngineSGLang:
	case EngineVLLM:
		env["INFERSIM_ENGINE"] = EngineVLLM
		args = []string{"/usr/local/bin/infersim", "--engine", "vllm", "serve", ModelPath, "--port", fmt.Sprint(ServicePort), "--tensor-parallel-size", "8"}
		server = "vLLM"
	default:
		return "", fmt.Errorf("unknown engine %q (want %s or %s)", o.Engine, EngineSGLang, EngineVLLM)
	}
	if o.KernelMode != "" {
		env["KDTREE_MODE"] = o.KernelMode
	}
	for k, v := range o.Env {
		env[k] = v
	}
	keys := make([]string, 0, len(env))
	for k := range env {
		if k == "" || strings.ContainsAny(k, "= \t\n\"\\") {
			return "", fmt.Errorf("unit environment: bad variable name %q", k)
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	restart := o.Restart
	if restart == "" {
		restart = "no"
	}
	args = append(args, o.Args...)
	var b strings.Builder
	fmt.Fprintf(&b, "# Written by bringup's testbed: infersim standing in for %s.\n", server)
	fmt.Fprintf(&b, "[Unit]\nDescription=%s inference server (infersim)\nAfter=network.target\n", server)
	if o.StartLimitBurst > 0 {
		interval := o.StartLimitInterval
		if interval == "" {
			interval = "60"
		}
		if strings.ContainsAny(interval, " \t\n\"'\\%$") {
			return "", fmt.Errorf("start limit interval %q: not a time span", interval)
		}
		fmt.Fprintf(&b, "StartLimitIntervalSec=%s\nStartLimitBurst=%d\n", interval, o.StartLimitBurst)
	}
	b.WriteString("\n[Service]\nType=simple\n")
	for _, k := range keys {
		q, err := unitQuote(k + "=" + env[k])
		if err != nil {
			return "", fmt.Errorf("unit environment %s: %w", k, err)
		}
		fmt.Fprintf(&b, "Environment=%s\n", q)
	}
	quoted := make([]string, len(args))
	for i, a := range args {
		q, err := unitQuote(a)
		if err != nil {
			return "", fmt.Errorf("unit argument %q: %w", a, err)
		}
		quoted[i] = q
	}
	fmt.Fprintf(&b, "ExecStart=%s\nRestart=%s\n", strings.Join(quoted, " "), restart)
	if restart != "no" {
		// Quick restarts, and no start limit hit before a test sees the
		// loop, unless the test asked for one.
		sec := o.RestartSec
		if sec == "" {
			sec = "1"
		}
		if strings.ContainsAny(sec, " \t\n\"'\\%$") {
			return "", fmt.Errorf("RestartSec %q: not a time span", sec)
		}
		fmt.Fprintf(&b, "RestartSec=%s\n", sec)
		if o.StartLimitBurst <= 0 {
			b.WriteString("StartLimitIntervalSec=0\n")
		}
	}
	b.WriteString("\n[Install]\nWantedBy=multi-user.target\n")
	return b.String(), nil
}

// unitQuote quotes s as one word of a unit file setting, with systemd's
// specifier character escaped.
func unitQuote(s string) (string, error) {
	if strings.ContainsAny(s, "\n\r") {
		return "", fmt.Errorf("newline in %q", s)
	}
	s = strings.ReplaceAll(s, "%", "%%")
	if s != "" && !strings.ContainsAny(s, " \t\"'\\;$") {
		return s, nil
	}
	s = strings.ReplaceAll(s, `\`, `\\`)
	s = strings.ReplaceAll(s, `"`, `\"`)
	s = strings.ReplaceAll(s, "$", "$$")
	return `"` + s + `"`, nil
}

// bind is one host path bound read-only into a host at Dest.
type bind struct{ Src, Dest string }

// writeHostFiles writes the per-host files under dir and returns the binds
// that put them in place. Binding (rather than copying into the image)
// keeps the shared image untouched and each host's overlay clean.
func writeHostFiles(dir string, h hostState, o HostOptions, hostKey keyPair, rootPub []byte, infersim string, journalLimit bool, upload string) ([]bind, error) {
	if err := os.MkdirAll(filepath.Join(dir, "authorized_keys.d"), 0o755); err != nil {
		return nil, fmt.Errorf("host %s files: %w", h.Name, err)
	}
	// MkdirAll leaves an existing directory's mode alone; sshd's
	// StrictModes wants these not group- or world-writable.
	for _, d := range []string{dir, filepath.Join(dir, "authorized_keys.d")} {
		if err := os.Chmod(d, 0o755); err != nil {
			return nil, fmt.Errorf("host %s files: %w", h.Name, err)
		}
	}
	unit, err := unitFile(o)
	if err != nil {
		return nil, fmt.Errorf("host %s: %w", h.Name, err)
	}
	type file struct {
		name string
		mode os.FileMode
		data []byte
		dest string // "" when the file is bound with its directory
	}
	files := []file{
		{"ssh_host_ed25519_key", 0o600, hostKey.Private, "/etc/ssh/ssh_host_ed25519_key"},
		{"ssh_host_ed25519_key.pub", 0o644, hostKey.Public, "/etc/ssh/ssh_host_ed25519_key.pub"},
		{"authorized_keys.d/root", 0o644, rootPub, ""},
		{"authorized_keys.d/deploy", 0o644, rootPub, ""},
		{"dbus-machine-id", 0o444, []byte(h.MachineID + "\n"), "/var/lib/dbus/machine-id"},
		{"hostname", 0o644, []byte(h.Name + "\n"), "/etc/hostname"},
		// sudo resolves its own host name and complains if it cannot.
		{"hosts", 0o644, []byte("127.0.0.1 localhost\n127.0.1.1 " + h.Name + "\n" + h.Addr + " " + h.Name + "\n::1 localhost ip6-localhost ip6-loopback\n"), "/etc/hosts"},
		{o.Unit(), 0o644, []byte(unit), "/etc/systemd/system/" + o.Unit()},
	}
	sudo := o.DeploySudo
	if sudo == SudoDefault {
		sudo = SudoNone
		if h.Index == 0 {
			sudo = SudoNoPasswd
		}
	}
	switch {
	case o.DeploySudoers != "":
		files = append(files, file{"sudoers-deploy", 0o440, []byte(o.DeploySudoers), "/etc/sudoers.d/deploy"})
	case sudo == SudoNoPasswd:
		files = append(files, file{"sudoers-deploy", 0o440, []byte("deploy ALL=(ALL) NOPASSWD: ALL\n"), "/etc/sudoers.d/deploy"})
	case sudo == SudoNone:
	default:
		return nil, fmt.Errorf("host %s: unknown deploy sudo %q", h.Name, sudo)
	}
	if !journalLimit {
		files = append(files, file{"journald.conf", 0o644, []byte("# Tests that count lines must not lose any to journald's rate limit.\n[Journal]\nRateLimitIntervalSec=0\nRateLimitBurst=0\n"),
			"/etc/systemd/journald.conf.d/bringup-testbed.conf"})
	}
	if upload != "" {
		// Its own journal to the run's log store, from boot: the uploader
		// is wanted by multi-user.target like the service below.
		files = append(files,
			file{"journal-upload.conf", 0o644, []byte(upload), "/etc/systemd/journal-upload.conf.d/bringup-testbed.conf"},
			file{"enable-upload.conf", 0o644, []byte("[Unit]\nWants=systemd-journal-upload.service\n"),
				"/etc/systemd/system/multi-user.target.d/bringup-testbed-upload.conf"})
	}
	if o.Enable {
		files = append(files, file{"enable-service.conf", 0o644, []byte("[Unit]\nWants=" + o.Unit() + "\n"),
			"/etc/systemd/system/multi-user.target.d/bringup-testbed-service.conf"})
	}
	binds := []bind{
		{filepath.Join(dir, "authorized_keys.d"), "/etc/ssh/authorized_keys.d"},
		{infersim, "/usr/local/bin/infersim"},
	}
	for _, f := range files {
		p := filepath.Join(dir, f.name)
		if err := os.WriteFile(p, f.data, f.mode); err != nil {
			return nil, fmt.Errorf("host %s files: %w", h.Name, err)
		}
		// WriteFile keeps the mode of a file that already exists.
		if err := os.Chmod(p, f.mode); err != nil {
			return nil, fmt.Errorf("host %s files: %w", h.Name, err)
		}
		if f.dest != "" {
			binds = append(binds, bind{p, f.dest})
		}
	}
	return binds, nil
}
