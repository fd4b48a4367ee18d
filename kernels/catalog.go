// Package kernels describes the custom kernels a service can load and the
// modes each can run in. A kernel is selected by an environment variable in
// the service's unit; some modes are not safe under CUDA graph capture (they
// synchronise with the host), and the rest of bringup uses that fact to
// explain failures and to refuse restarts that would fail.
package kernels

import (
	"fmt"
	"slices"
	"strings"
)

// Mode is one mode a kernel can run in.
type Mode struct {
	Name string `json:"name" yaml:"name"`
	// CaptureSafe is false for modes that do host syncs (.item(), .cpu())
	// inside the forward pass, which CUDA graph capture forbids.
	CaptureSafe bool   `json:"capture_safe" yaml:"capture_safe"`
	Description string `json:"description,omitempty" yaml:"description,omitempty"`
}

// Kernel is one injectable kernel.
type Kernel struct {
	Name   string `json:"name" yaml:"name"`
	EnvVar string `json:"env_var" yaml:"env_var"` // the variable that selects the mode, e.g. KDTREE_MODE
	Modes  []Mode `json:"modes" yaml:"modes"`
	// PythonPath is the directory put on PYTHONPATH so that its
	// sitecustomize.py injects the kernel.
	PythonPath string `json:"pythonpath,omitempty" yaml:"pythonpath,omitempty"`
	LocalDir   string `json:"local_dir,omitempty" yaml:"local_dir,omitempty"`
	RemoteDir  string `json:"remote_dir,omitempty" yaml:"remote_dir,omitempty"`
	// Check is a command run on the host before a restart that proves a
	// mode survives CUDA graph capture ({mode} is replaced by the mode),
	// e.g. python3 -m kdtree_ext.capture_check --mode {mode}. Exit 0 is a
	// pass; its output goes through the diagnosis.
	Check string `json:"check,omitempty" yaml:"check,omitempty"`
}

// CheckCommand is k's check command for mode, with {mode} replaced by the
// mode, shell-quoted; false when k has no check or no such mode.
func (k Kernel) CheckCommand(mode string) (string, bool) {
	if k.Check == "" {
		return "", false
	}
	if _, ok := k.Mode(mode); !ok {
		return "", false
	}
	return strings.ReplaceAll(k.Check, "{mode}", "'"+strings.ReplaceAll(mode, "'", `'\''`)+"'"), true
}

// Mode returns the named mode of k.
func (k Kernel) Mode(name string) (Mode, bool) {
	for _, m := range k.Modes {
		if m.Name == name {
			return m, true
		}
	}
	return Mode{}, false
}

// ModeNames lists k's modes in catalog order.
func (k Kernel) ModeNames() []string {
	out := make([]string, len(k.Modes))
	for i, m := range k.Modes {
		out[i] = m.Name
	}
	return out
}

// SafeModes lists the capture-safe modes of k other than "off", then "off":
// the order in which bringup suggests a fix.
func (k Kernel) SafeModes() []string {
	var out []string
	var off bool
	for _, m := range k.Modes {
		switch {
		case !m.CaptureSafe:
		case m.Name == "off":
			off = true
		default:
			out = append(out, m.Name)
		}
	}
	if off {
		out = append(out, "off")
	}
	return out
}

// Validate reports the first problem with k's definition.
func (k Kernel) Validate() error {
	if k.Name == "" {
		return fmt.Errorf("kernel: name is empty")
	}
	if k.EnvVar == "" {
		return fmt.Errorf("kernel %s: env_var is empty", k.Name)
	}
	if len(k.Modes) == 0 {
		return fmt.Errorf("kernel %s: no modes", k.Name)
	}
	seen := map[string]bool{}
	for i, m := range k.Modes {
		if m.Name == "" {
			return fmt.Errorf("kernel %s: modes[%d]: name is empty", k.Name, i)
		}
		if seen[m.Name] {
			return fmt.Errorf("kernel %s: mode %q listed twice", k.Name, m.Name)
		}
		seen[m.Name] = true
	}
	return nil
}

// Catalog is the set of kernels a fleet knows about.
type Catalog struct {
	Kernels []Kernel `json:"kernels" yaml:"kernels"`
}

// DefaultCatalog is the catalog of the demo: the kdtree-verify kernel with
// modes off, validate (host syncs: not capture-safe) and on.
func DefaultCatalog() Catalog {
	return Catalog{Kernels: []Kernel{{
		Name:   "kdtree-verify",
		EnvVar: "KDTREE_MODE",
		Modes: []Mode{
			{Name: "off", CaptureSafe: true, Description: "kernel not loaded"},
			{Name: "validate", CaptureSafe: false, Description: "runs the kernel and checks it against the reference with host syncs"},
			{Name: "on", CaptureSafe: true, Description: "runs the kernel"},
		},
		PythonPath: "/opt/kdtree/site",
		LocalDir:   "kernels/kdtree",
		RemoteDir:  "/opt/kdtree/site",
	}}}
}

// Kernel returns the kernel named name.
func (c Catalog) Kernel(name string) (Kernel, bool) {
	for _, k := range c.Kernels {
		if k.Name == name {
			return k, true
		}
	}
	return Kernel{}, false
}

// Validate reports the first problem with the catalog.
func (c Catalog) Validate() error {
	seen := map[string]bool{}
	for _, k := range c.Kernels {
		if err := k.Validate(); err != nil {
			return err
		}
		if seen[k.Name] {
			return fmt.Errorf("kernel %q listed twice", k.Name)
		}
		seen[k.Name] = true
	}
	return nil
}

// ActiveMode is the mode of one kernel found in an environment.
type ActiveMode struct {
	Kernel      string
	Mode        string
	CaptureSafe bool
	Known       bool // the mode is in the catalog
}

// ModeMap is ms as kernel → mode, the form history records and looks up;
// nil when ms is empty.
func ModeMap(ms []ActiveMode) map[string]string {
	if len(ms) == 0 {
		return nil
	}
	m := make(map[string]string, len(ms))
	for _, a := range ms {
		m[a.Kernel] = a.Mode
	}
	return m
}

// ModesIn reads each kernel's mode from env (KEY=VALUE entries; a later
// entry overrides an earlier one, as systemd does). A kernel whose variable
// is absent is reported in mode "off".
func (c Catalog) ModesIn(env []string) []ActiveMode {
	vals := map[string]string{}
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			vals[k] = v
		}
	}
	out := make([]ActiveMode, 0, len(c.Kernels))
	for _, k := range c.Kernels {
		name, ok := vals[k.EnvVar]
		if !ok || name == "" {
			name = "off"
		}
		m, known := k.Mode(name)
		out = append(out, ActiveMode{Kernel: k.Name, Mode: name, CaptureSafe: m.CaptureSafe || !known && name == "off", Known: known})
	}
	return out
}

// ParseAssignment parses "KERNEL=MODE" against the catalog, in any case
// (what people type into a palette or a flag), and returns the catalog's
// kernel and mode. It is the one parser of KERNEL=MODE.
func (c Catalog) ParseAssignment(s string) (Kernel, Mode, error) {
	name, mode, ok := strings.Cut(s, "=")
	switch {
	case !ok:
		return Kernel{}, Mode{}, fmt.Errorf("%q: want KERNEL=MODE", s)
	case len(c.Kernels) == 0:
		return Kernel{}, Mode{}, fmt.Errorf("%q: no kernels configured", s)
	}
	i := slices.IndexFunc(c.Kernels, func(k Kernel) bool { return strings.EqualFold(k.Name, name) })
	if i < 0 {
		return Kernel{}, Mode{}, fmt.Errorf("%q: unknown kernel %q (known: %s)", s, name, strings.Join(c.names(), ", "))
	}
	k := c.Kernels[i]
	j := slices.IndexFunc(k.Modes, func(m Mode) bool { return strings.EqualFold(m.Name, mode) })
	if j < 0 {
		return Kernel{}, Mode{}, fmt.Errorf("%q: kernel %s has no mode %q (modes: %s)", s, k.Name, mode, strings.Join(k.ModeNames(), ", "))
	}
	return k, k.Modes[j], nil
}

func (c Catalog) names() []string {
	out := make([]string, len(c.Kernels))
	for i, k := range c.Kernels {
		out[i] = k.Name
	}
	return out
}
