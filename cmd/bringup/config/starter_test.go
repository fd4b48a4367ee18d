package config

import (
	"strings"
	"testing"
)

// TestRenderStarterReadsBack: what init writes parses back to the same
// hosts, units, engines and probe ports: the commonest as defaults, the
// others per host; names that YAML would read as something else quoted.
func TestRenderStarterReadsBack(t *testing.T) {
	hosts := []StarterHost{
		{Name: "gpu1", Unit: "sglang.service", Engine: EngineSGLang, Port: 30000, Note: "found sglang.service (active)"},
		{Name: "gpu2", Unit: "sglang.service", Engine: EngineSGLang, Port: 30000},
		{Name: "deploy@10.0.0.7:2222", Unit: "vllm-llama.service", Engine: EngineVLLM, Port: 8000},
		{Name: "on", Note: "no sglang or vLLM unit found\nlisted: ssh.service"}, // a YAML bool as a name
	}
	data := RenderStarter(hosts, "/etc/bringup/ssh config", "written by bringup init\nedit freely")
	t.Logf("\n%s", data)
	c, err := Parse("starter.yaml", data)
	if err != nil {
		t.Fatalf("the starter does not parse: %v\n%s", err, data)
	}
	if c.SSHConfig != "/etc/bringup/ssh config" {
		t.Errorf("ssh_config %q", c.SSHConfig)
	}
	if len(c.Hosts) != len(hosts) {
		t.Fatalf("%d hosts read back, want %d", len(c.Hosts), len(hosts))
	}
	for i, want := range hosts {
		got := c.Hosts[i]
		wantUnit, wantEngine, wantPort := want.Unit, want.Engine, want.Port
		if want.Unit == "" { // no unit found: the defaults
			wantUnit, wantEngine, wantPort = "sglang.service", EngineSGLang, 30000
		}
		if got.SSH != want.Name || got.Unit != wantUnit || got.Engine != wantEngine || got.Probe.Port != wantPort {
			t.Errorf("host %d: read back %+v, want %s %s %s :%d", i, got, want.Name, wantUnit, wantEngine, wantPort)
		}
	}
	for _, s := range []string{"# written by bringup init\n# edit freely\n", "  # found sglang.service (active)\n", "  # listed: ssh.service\n", "# kernels:"} {
		if !strings.Contains(string(data), s) {
			t.Errorf("starter lacks %q", s)
		}
	}
}

// TestRenderStarterNoUnits: with no unit found anywhere the defaults are
// the package's, and the file still parses.
func TestRenderStarterNoUnits(t *testing.T) {
	data := RenderStarter([]StarterHost{{Name: "gpu1", Note: "no unit"}}, "", "x")
	c, err := Parse("starter.yaml", data)
	if err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	if h := c.Hosts[0]; h.Unit != DefaultUnit || h.Probe.Port != DefaultSGLangPort {
		t.Errorf("host %+v, want the package defaults", h)
	}
}
