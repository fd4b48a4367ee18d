package config

import (
	"path/filepath"
	"testing"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote/testkit/testbed"
)

// TestLoadTestbedInventory loads the config.yaml a testbed writes: the file
// users get from `testbed up` must pass the same checks as their own.
func TestLoadTestbedInventory(t *testing.T) {
	tb := testbed.Start(t, 2)
	c, err := Load(filepath.Join(tb.Inventory(), "config.yaml"))
	if err != nil {
		t.Fatalf("load the testbed's config: %v", err)
	}
	hosts, err := c.Select(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(hosts) != len(tb.Hosts()) {
		t.Fatalf("%d hosts, want %d", len(hosts), len(tb.Hosts()))
	}
	for i, h := range tb.Hosts() {
		got := hosts[i]
		want := Target{Host: h.Name, HostName: h.Addr, User: "root", Port: 22}
		if got.Name != h.Name || got.Target() != want || got.Unit != testbed.UnitName ||
			got.Probe.Port != testbed.ServicePort || got.Probe.Path != testbed.HealthPath {
			t.Errorf("host %d: %+v (target %+v), want %s at %+v with the testbed's unit and probe", i, got, got.Target(), h.Name, want)
		}
	}
	if c.SSHConfig != tb.SSHConfig() {
		t.Errorf("ssh_config %q, want %q", c.SSHConfig, tb.SSHConfig())
	}
	k, ok := c.Kernels.Kernel("kdtree-verify")
	want := kernels.DefaultCatalog().Kernels[0]
	if !ok || k.EnvVar != want.EnvVar || len(k.Modes) != len(want.Modes) || k.SafeModes()[0] != "on" {
		t.Errorf("kernel %+v, want the default catalog's kdtree-verify", k)
	}
}
