package testbed

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

func TestUnitFile(t *testing.T) {
	cases := []struct {
		name string
		o    HostOptions
		want []string
		not  []string
	}{
		{"defaults", HostOptions{}, []string{
			"Type=simple\n", "Environment=KDTREE_MODE=off\n", "Environment=PYTHONPATH=/opt/kdtree/site\n",
			"Environment=PYTHONUNBUFFERED=1\n", "Environment=INFERSIM_WEIGHTS_SECONDS=4\n",
			"ExecStart=/usr/local/bin/infersim --model-path /models/demo --port 30000 --tp 8\n", "Restart=no\n",
		}, []string{"RestartSec"}},
		{"validate, no graphs, crash loop", HostOptions{
			KernelMode: "validate", Args: []string{"--disable-cuda-graph"}, Restart: "on-failure",
			Env: map[string]string{"INFERSIM_FAIL": "oom at 50%", "INFERSIM_WEIGHTS_SECONDS": "0"},
		}, []string{
			"Environment=KDTREE_MODE=validate\n", "--tp 8 --disable-cuda-graph\n", "Restart=on-failure\n",
			"StartLimitIntervalSec=0\n", `Environment="INFERSIM_FAIL=oom at 50%%"` + "\n", "Environment=INFERSIM_WEIGHTS_SECONDS=0\n",
		}, []string{"KDTREE_MODE=off", "INFERSIM_WEIGHTS_SECONDS=4"}},
		{"restart policy: RestartSec, no start limit", HostOptions{Restart: "on-failure", RestartSec: "2", Env: map[string]string{"INFERSIM_FAIL": "crashloop"}}, []string{
			"Restart=on-failure\nRestartSec=2\nStartLimitIntervalSec=0\n", "Environment=INFERSIM_FAIL=crashloop\n",
		}, []string{"StartLimitBurst", "RestartSec=1\n"}},
		{"start limit", HostOptions{Restart: "on-failure", RestartSec: "200ms", StartLimitBurst: 3, StartLimitInterval: "120"}, []string{
			"After=network.target\nStartLimitIntervalSec=120\nStartLimitBurst=3\n\n[Service]\n", "Restart=on-failure\nRestartSec=200ms\n\n[Install]",
		}, []string{"StartLimitIntervalSec=0"}},
		{"vLLM", HostOptions{Engine: EngineVLLM, KernelMode: "validate", Args: []string{"--enforce-eager"}}, []string{
			"standing in for vLLM", "Description=vLLM inference server (infersim)\n", "Environment=INFERSIM_ENGINE=vllm\n", "Environment=KDTREE_MODE=validate\n",
			"ExecStart=/usr/local/bin/infersim --engine vllm serve /models/demo --port 30000 --tensor-parallel-size 8 --enforce-eager\n",
		}, []string{"--model-path", "--tp 8", "SGLang"}},
	}
	if u := (HostOptions{Engine: EngineVLLM}).Unit(); u != VLLMUnitName {
		t.Errorf("vLLM host's unit %q, want %q", u, VLLMUnitName)
	}
	if u := (HostOptions{}).Unit(); u != UnitName {
		t.Errorf("default host's unit %q, want %q", u, UnitName)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			u, err := unitFile(c.o)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range c.want {
				if !strings.Contains(u, w) {
					t.Errorf("unit lacks %q:\n%s", w, u)
				}
			}
			for _, n := range c.not {
				if strings.Contains(u, n) {
					t.Errorf("unit has %q:\n%s", n, u)
				}
			}
		})
	}
	if _, err := unitFile(HostOptions{Env: map[string]string{"A B": "1"}}); err == nil {
		t.Error("a variable name with a space was accepted")
	}
	if _, err := unitFile(HostOptions{Args: []string{"a\nb"}}); err == nil {
		t.Error("an argument with a newline was accepted")
	}
	if _, err := unitFile(HostOptions{Engine: "trtllm"}); err == nil || !strings.Contains(err.Error(), "trtllm") {
		t.Errorf("unknown engine: %v", err)
	}
}

func TestNames(t *testing.T) {
	id := "a1b2c3"
	if l := linkName(id, 98); len(l) > maxIfName {
		t.Errorf("link name %q is %d bytes, over %d", l, len(l), maxIfName)
	}
	if got, want := netnsName(id, "gpu2"), "brtb-a1b2c3-gpu2"; got != want {
		t.Errorf("netns name %q, want %q", got, want)
	}
	seen := map[string]bool{}
	for k := range slots {
		root, host := slotAddrs(k)
		if !subnet.Contains(root) || !subnet.Contains(host) || slotOf(root) != k || slotOf(host) != k {
			t.Fatalf("slot %d: %s %s", k, root, host)
		}
		if seen[host.String()] {
			t.Fatalf("slot %d reuses %s", k, host)
		}
		seen[host.String()] = true
	}
	if r, h := slotAddrs(65); r.String() != "10.213.1.5" || h.String() != "10.213.1.6" {
		t.Errorf("slot 65 = %s, %s", r, h)
	}
}

func TestWriteInventory(t *testing.T) {
	inv := t.TempDir()
	root, err := newKeyPair("test")
	if err != nil {
		t.Fatal(err)
	}
	st := runState{RunID: "abcdef", Inventory: inv}
	var hostKeys []keyPair
	for i, name := range []string{"gpu1", "gpu2"} {
		k, err := newKeyPair("root@" + name)
		if err != nil {
			t.Fatal(err)
		}
		hostKeys = append(hostKeys, k)
		_, addr := slotAddrs(i)
		st.Hosts = append(st.Hosts, hostState{Index: i, Name: name, Addr: addr.String()})
	}
	if err := writeInventory(inv, st, root, hostKeys); err != nil {
		t.Fatal(err)
	}
	// The private key parses and is 0600.
	fi, err := os.Stat(filepath.Join(inv, keyName))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("key mode %v", fi.Mode().Perm())
	}
	b, _ := os.ReadFile(filepath.Join(inv, keyName))
	if _, err := ssh.ParsePrivateKey(b); err != nil {
		t.Errorf("private key: %v", err)
	}
	// known_hosts accepts each host's key at its address and rejects the
	// other host's.
	cb, err := knownhosts.New(filepath.Join(inv, knownHostsName))
	if err != nil {
		t.Fatal(err)
	}
	for i, h := range st.Hosts {
		addr := &fakeAddr{h.Addr + ":22"}
		if err := cb(h.Addr+":22", addr, hostKeys[i].Signer.PublicKey()); err != nil {
			t.Errorf("%s: own key rejected: %v", h.Name, err)
		}
		if err := cb(h.Addr+":22", addr, hostKeys[1-i].Signer.PublicKey()); err == nil {
			t.Errorf("%s: the other host's key accepted", h.Name)
		}
	}
	sc, _ := os.ReadFile(filepath.Join(inv, sshConfigName))
	for _, want := range []string{"Host gpu1\n  HostName 10.213.0.2\n  User root\n", "Host gpu2-deploy\n  HostName 10.213.0.6\n  User deploy\n",
		"StrictHostKeyChecking yes", "IdentitiesOnly yes", "UserKnownHostsFile \"" + filepath.Join(inv, knownHostsName) + "\""} {
		if !strings.Contains(string(sc), want) {
			t.Errorf("ssh_config lacks %q:\n%s", want, sc)
		}
	}
	var cfg configFile
	y, _ := os.ReadFile(filepath.Join(inv, configName))
	if err := yaml.Unmarshal(y, &cfg); err != nil {
		t.Fatal(err)
	}
	if len(cfg.Hosts) != 2 || cfg.Hosts[1].SSH != "gpu2" || cfg.Hosts[1].Address != "10.213.0.6" || cfg.Defaults.Unit != UnitName ||
		cfg.Defaults.Engine != EngineSGLang || cfg.Hosts[1].Unit != UnitName || cfg.Hosts[1].Engine != EngineSGLang {
		t.Errorf("config.yaml: %+v", cfg)
	}
	if len(cfg.Kernels) == 0 || cfg.Kernels[0].EnvVar != "KDTREE_MODE" {
		t.Errorf("config.yaml kernels: %+v", cfg.Kernels)
	}
}

// TestInventoryEngine: a testbed of one engine names it as the default; a
// mixed one leaves the default to detection (auto), and each host names
// its own engine and unit.
func TestInventoryEngine(t *testing.T) {
	hosts := func(engines ...string) []hostState {
		var out []hostState
		for _, e := range engines {
			out = append(out, hostState{Options: HostOptions{Engine: e}})
		}
		return out
	}
	for _, c := range []struct {
		engines []string
		want    string
	}{
		{[]string{"", ""}, EngineSGLang},
		{[]string{EngineVLLM, EngineVLLM}, EngineVLLM},
		{[]string{EngineVLLM, ""}, "auto"},
	} {
		if got := inventoryEngine(hosts(c.engines...)); got != c.want {
			t.Errorf("engines %q: default %q, want %q", c.engines, got, c.want)
		}
	}
}

type fakeAddr struct{ s string }

func (a *fakeAddr) Network() string { return "tcp" }
func (a *fakeAddr) String() string  { return a.s }

func TestProcIdentity(t *testing.T) {
	self, err := procOf(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if !self.alive() {
		t.Error("this process is not alive")
	}
	if (proc{PID: self.PID, Start: self.Start + 1}).alive() {
		t.Error("a process with another start time counts as this one")
	}
}

func TestUnescapeMount(t *testing.T) {
	if got := unescapeMount(`/tmp/a\040b`); got != "/tmp/a b" {
		t.Errorf("got %q", got)
	}
}

// TestDeploySudoers checks the least-privilege knob: the deploy user's
// sudoers file holds exactly the given rule, in place of the default's
// NOPASSWD: ALL, and is bound where sudo reads it.
func TestDeploySudoers(t *testing.T) {
	key, err := newKeyPair("test")
	if err != nil {
		t.Fatal(err)
	}
	rule := "deploy ALL=(root) NOPASSWD: /usr/bin/systemctl --no-ask-password daemon-reload\n"
	for _, c := range []struct {
		o    HostOptions
		want string // the sudoers file; "" = none
	}{
		{HostOptions{}, "deploy ALL=(ALL) NOPASSWD: ALL\n"},
		{HostOptions{DeploySudoers: rule}, rule},
		{HostOptions{DeploySudo: SudoNone}, ""},
	} {
		dir := t.TempDir()
		binds, err := writeHostFiles(dir, hostState{Index: 0, Name: "gpu1", Addr: "10.0.0.2"}, c.o, key, key.Public, "/bin/true", false, "")
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(dir, "sudoers-deploy"))
		bound := slices.ContainsFunc(binds, func(b bind) bool { return b.Dest == "/etc/sudoers.d/deploy" })
		if c.want == "" {
			if err == nil || bound {
				t.Errorf("%+v: a sudoers file %q (bound %v), want none", c.o, got, bound)
			}
			continue
		}
		fi, serr := os.Stat(filepath.Join(dir, "sudoers-deploy"))
		if err != nil || string(got) != c.want || !bound || serr != nil || fi.Mode().Perm() != 0o440 {
			t.Errorf("%+v: sudoers %q (%v, bound %v, mode %v), want %q mode 0440", c.o, got, err, bound, fi.Mode(), c.want)
		}
	}
}
