package kernels

import (
	"slices"
	"strings"
	"testing"
)

func TestModesIn(t *testing.T) {
	c := DefaultCatalog()
	tests := []struct {
		name string
		env  []string
		mode string
		safe bool
	}{
		{"absent means off", []string{"PATH=/usr/bin"}, "off", true},
		{"validate is not capture-safe", []string{"KDTREE_MODE=validate"}, "validate", false},
		{"later entry wins", []string{"KDTREE_MODE=validate", "KDTREE_MODE=on"}, "on", true},
		{"empty value means off", []string{"KDTREE_MODE="}, "off", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := c.ModesIn(tt.env)
			if len(got) != 1 || got[0].Kernel != "kdtree-verify" || got[0].Mode != tt.mode || got[0].CaptureSafe != tt.safe || !got[0].Known {
				t.Fatalf("ModesIn(%v) = %+v", tt.env, got)
			}
		})
	}
	unknown := c.ModesIn([]string{"KDTREE_MODE=turbo"})
	if unknown[0].Known || unknown[0].CaptureSafe {
		t.Fatalf("unknown mode = %+v, want unknown and not safe", unknown[0])
	}
}

func TestSafeModesPutsOffLast(t *testing.T) {
	k, _ := DefaultCatalog().Kernel("kdtree-verify")
	if got := k.SafeModes(); !slices.Equal(got, []string{"on", "off"}) {
		t.Fatalf("SafeModes = %v", got)
	}
}

func TestParseAssignment(t *testing.T) {
	c := DefaultCatalog()
	k, m, err := c.ParseAssignment("kdtree-verify=on")
	if err != nil || k.Name != "kdtree-verify" || m.Name != "on" {
		t.Fatalf("got %v %v %v", k.Name, m.Name, err)
	}
	// Typed in any case, answered in the catalog's spelling.
	if k, m, err := c.ParseAssignment("KDTree-Verify=ON"); err != nil || k.Name != "kdtree-verify" || m.Name != "on" {
		t.Errorf("any case: got %v %v %v", k.Name, m.Name, err)
	}
	if _, _, err := (Catalog{}).ParseAssignment("a=b"); err == nil || !strings.Contains(err.Error(), "no kernels configured") {
		t.Errorf("empty catalog: err = %v", err)
	}
	for in, want := range map[string]string{
		"kdtree-verify":       "want KERNEL=MODE",
		"nope=on":             `unknown kernel "nope" (known: kdtree-verify)`,
		"kdtree-verify=turbo": `no mode "turbo" (modes: off, validate, on)`,
	} {
		if _, _, err := c.ParseAssignment(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err = %v, want it to contain %q", in, err, want)
		}
	}
}

func TestValidate(t *testing.T) {
	if err := DefaultCatalog().Validate(); err != nil {
		t.Fatal(err)
	}
	bad := []struct {
		c    Catalog
		want string
	}{
		{Catalog{Kernels: []Kernel{{EnvVar: "X", Modes: []Mode{{Name: "a"}}}}}, "name is empty"},
		{Catalog{Kernels: []Kernel{{Name: "k", Modes: []Mode{{Name: "a"}}}}}, "kernel k: env_var is empty"},
		{Catalog{Kernels: []Kernel{{Name: "k", EnvVar: "X"}}}, "kernel k: no modes"},
		{Catalog{Kernels: []Kernel{{Name: "k", EnvVar: "X", Modes: []Mode{{Name: "a"}, {Name: "a"}}}}}, `mode "a" listed twice`},
		{Catalog{Kernels: []Kernel{{Name: "k", EnvVar: "X", Modes: []Mode{{}}}}}, "modes[0]: name is empty"},
		{Catalog{Kernels: []Kernel{{Name: "k", EnvVar: "X", Modes: []Mode{{Name: "a"}}}, {Name: "k", EnvVar: "Y", Modes: []Mode{{Name: "a"}}}}}, `kernel "k" listed twice`},
	}
	for _, b := range bad {
		if err := b.c.Validate(); err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("Validate = %v, want %q", err, b.want)
		}
	}
}

func TestCheckCommand(t *testing.T) {
	k, _ := DefaultCatalog().Kernel("kdtree-verify")
	if _, ok := k.CheckCommand("on"); ok {
		t.Errorf("a kernel with no check has a check command")
	}
	k.Check = "python3 -m kdtree_ext.capture_check --mode {mode}"
	if got, ok := k.CheckCommand("validate"); !ok || got != "python3 -m kdtree_ext.capture_check --mode 'validate'" {
		t.Errorf("CheckCommand(validate) = %q, %v", got, ok)
	}
	if _, ok := k.CheckCommand("nope"); ok {
		t.Errorf("a check command for a mode the kernel lacks")
	}
}
