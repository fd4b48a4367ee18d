package testbed

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/bringup-dev/bringup/kernels"
)

// Inventory file names.
const (
	keyName        = "id_ed25519"
	knownHostsName = "known_hosts"
	sshConfigName  = "ssh_config"
	configName     = "config.yaml"
)

// configFile is the bringup config the inventory holds. Hosts are
// ssh_config aliases, so the address, user and key live in one place.
type configFile struct {
	SSHConfig string           `yaml:"ssh_config"`
	Defaults  configDefaults   `yaml:"defaults"`
	Hosts     []configHost     `yaml:"hosts"`
	Kernels   []kernels.Kernel `yaml:"kernels"`
}

type configDefaults struct {
	Unit   string      `yaml:"unit"`
	Engine string      `yaml:"engine"`
	Probe  configProbe `yaml:"probe"`
}

type configProbe struct {
	Port int    `yaml:"port"`
	Path string `yaml:"path"`
}

type configHost struct {
	Name    string `yaml:"name"`
	SSH     string `yaml:"ssh"` // alias in ssh_config
	Address string `yaml:"address"`
	User    string `yaml:"user"`
	Port    int    `yaml:"port"`
	Unit    string `yaml:"unit"`
	Engine  string `yaml:"engine"`
}

// writeInventory writes the key, known_hosts, ssh_config and config.yaml.
func writeInventory(inv string, st runState, rootKey keyPair, hostKeys []keyPair) error {
	keyPath := filepath.Join(inv, keyName)
	khPath := filepath.Join(inv, knownHostsName)
	var kh, sc bytes.Buffer
	fmt.Fprintf(&sc, "# Written by bringup's testbed, run %s.\n# Use: ssh -F %s gpu1\n", st.RunID, filepath.Join(inv, sshConfigName))
	var aliases []string
	cfg := configFile{
		SSHConfig: filepath.Join(inv, sshConfigName),
		Defaults:  configDefaults{Unit: UnitName, Engine: inventoryEngine(st.Hosts), Probe: configProbe{Port: ServicePort, Path: HealthPath}},
		Kernels:   kernels.DefaultCatalog().Kernels,
	}
	for i, h := range st.Hosts {
		pub, err := ssh.ParsePublicKey(hostKeys[i].Signer.PublicKey().Marshal())
		if err != nil {
			return fmt.Errorf("host %s key: %w", h.Name, err)
		}
		// The alias and the address: OpenSSH looks keys up by HostName.
		kh.WriteString(knownhosts.Line([]string{h.Name, h.Addr}, pub) + "\n")
		fmt.Fprintf(&sc, "\nHost %s\n  HostName %s\n  User root\n", h.Name, h.Addr)
		fmt.Fprintf(&sc, "\nHost %s-deploy\n  HostName %s\n  User deploy\n", h.Name, h.Addr)
		aliases = append(aliases, h.Name, h.Name+"-deploy")
		cfg.Hosts = append(cfg.Hosts, configHost{Name: h.Name, SSH: h.Name, Address: h.Addr, User: "root", Port: 22, Unit: h.Options.Unit(), Engine: h.Options.engine()})
	}
	fmt.Fprintf(&sc, "\nHost %s\n", strings.Join(aliases, " "))
	fmt.Fprintf(&sc, "  Port 22\n  IdentityFile \"%s\"\n  IdentitiesOnly yes\n", keyPath)
	fmt.Fprintf(&sc, "  UserKnownHostsFile \"%s\"\n  GlobalKnownHostsFile /dev/null\n  StrictHostKeyChecking yes\n", khPath)
	sc.WriteString("  BatchMode yes\n  ConnectTimeout 10\n  ServerAliveInterval 15\n")

	y, err := yaml.Marshal(cfg)
	if err != nil {
		return fmt.Errorf("encode %s: %w", configName, err)
	}
	header := fmt.Sprintf("# Written by bringup's testbed, run %s. Hosts are aliases in ssh_config.\n", st.RunID)
	files := []struct {
		name string
		mode os.FileMode
		data []byte
	}{
		{keyName, 0o600, rootKey.Private},
		{keyName + ".pub", 0o644, rootKey.Public},
		{knownHostsName, 0o644, kh.Bytes()},
		{sshConfigName, 0o644, sc.Bytes()},
		{configName, 0o644, append([]byte(header), y...)},
	}
	for _, f := range files {
		p := filepath.Join(inv, f.name)
		if err := os.WriteFile(p, f.data, f.mode); err != nil {
			return fmt.Errorf("write inventory: %w", err)
		}
		if err := os.Chmod(p, f.mode); err != nil {
			return fmt.Errorf("write inventory: %w", err)
		}
	}
	return nil
}

// inventoryEngine is the config's default engine: the hosts' engine when
// they all run the same one, else auto (each host also names its own).
func inventoryEngine(hosts []hostState) string {
	engine := EngineSGLang
	for i, h := range hosts {
		switch e := h.Options.engine(); {
		case i == 0:
			engine = e
		case e != engine:
			return "auto"
		}
	}
	return engine
}

// infersimBinary returns the infersim binary to bind into the hosts:
// o.Infersim as given, else one built from the module's cmd/infersim into
// the inventory (static, since the hosts' libc is not the machine's).
func infersimBinary(ctx context.Context, o Options, inv string) (string, error) {
	if o.Infersim != "" {
		p, err := filepath.Abs(o.Infersim)
		if err != nil {
			return "", fmt.Errorf("infersim %s: %w", o.Infersim, err)
		}
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("infersim: %w", err)
		}
		return p, nil
	}
	mod := o.ModuleDir
	if mod == "" {
		out, err := run(ctx, "go", "env", "GOMOD")
		if err != nil {
			return "", fmt.Errorf("find module for cmd/infersim: %w", err)
		}
		gomod := strings.TrimSpace(out)
		if gomod == "" || gomod == os.DevNull {
			return "", errors.New("find module for cmd/infersim: not inside a Go module; set Options.ModuleDir or " + EnvInfersim)
		}
		mod = filepath.Dir(gomod)
	}
	if _, err := os.Stat(filepath.Join(mod, "cmd", "infersim")); err != nil {
		return "", fmt.Errorf("infersim source: %w (set Options.Infersim or %s to a prebuilt binary)", err, EnvInfersim)
	}
	bin := filepath.Join(inv, "bin", "infersim")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/infersim")
	cmd.Dir = mod
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build infersim in %s: %w: %s", mod, err, strings.TrimSpace(string(out)))
	}
	return bin, nil
}
