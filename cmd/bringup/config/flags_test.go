package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOpenKeepsSelectedGroups checks the groups the console's palette
// gets: each cut down to the hosts selected, empty ones dropped.
func TestOpenKeepsSelectedGroups(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	data := "hosts: [gpu1, gpu2, gpu3, gpu4]\ngroups:\n  rack-a: [gpu1, gpu2]\n  rack-b: [gpu3, gpu4]\n  odd: [gpu1, gpu3]\n"
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	f := Flags{Path: path}
	cfg, hosts, err := f.Open(func(string) string { return "" }, []string{"rack-a"})
	if err != nil || len(hosts) != 2 {
		t.Fatalf("open rack-a: %d hosts, %v", len(hosts), err)
	}
	if got, want := fmt.Sprint(cfg.GroupsOf(hosts)), "map[odd:[gpu1] rack-a:[gpu1 gpu2]]"; got != want {
		t.Errorf("groups %s, want %s", got, want)
	}
}

// TestPrecedence: one order for every setting: flags, then the
// environment (BRINGUP_CONFIG), then the config file. -H merges with the
// file in force (hosts from -H, the rest from the file) instead of
// discarding it; -u overrides the file's units.
func TestPrecedence(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	vllm := write("vllm.yaml", `defaults: {unit: vllm.service, engine: vllm}
hosts:
  - gpu1
  - {name: gpu2, ssh: deploy@10.0.0.2:2222, unit: vllm-b.service}
groups:
  rack-a: [gpu1, gpu2]
kernels:
  - name: fa3
    env_var: FA3_MODE
    modes: [{name: "off", capture_safe: true}]
ssh_config: ./ssh_config
`)
	env := write("env.yaml", "hosts: [e1]\n")
	write("xdg/bringup/config.yaml", "defaults: {probe: {port: 9000}}\nhosts: [d1]\n")
	withDefault := map[string]string{"XDG_CONFIG_HOME": filepath.Join(dir, "xdg")}
	noDefault := map[string]string{"HOME": filepath.Join(dir, "nohome")}

	for _, tc := range []struct {
		name  string
		flags Flags
		env   map[string]string
		args  []string
		want  string // hosts as name=ssh/unit/engine/port, then ssh_config and kernels
		err   string
	}{
		{name: "default file", env: withDefault, want: "d1=d1/sglang.service/auto/9000 ssh= kernels=kdtree-verify"},
		{name: "env over default file", env: with(withDefault, EnvConfig, env), want: "e1=e1/sglang.service/auto/30000 ssh= kernels=kdtree-verify"},
		{name: "--config over env", flags: Flags{Path: vllm}, env: with(withDefault, EnvConfig, env),
			want: "gpu1=gpu1/vllm.service/vllm/8000 gpu2=deploy@10.0.0.2:2222/vllm-b.service/vllm/8000 ssh=" + dir + "/ssh_config kernels=fa3"},
		{name: "-H with --config merges", flags: Flags{Path: vllm, Hosts: "x,gpu2"}, env: noDefault,
			want: "x=x/vllm.service/vllm/8000 gpu2=deploy@10.0.0.2:2222/vllm-b.service/vllm/8000 ssh=" + dir + "/ssh_config kernels=fa3"},
		{name: "-H with env config merges", flags: Flags{Hosts: "x"}, env: with(noDefault, EnvConfig, vllm),
			want: "x=x/vllm.service/vllm/8000 ssh=" + dir + "/ssh_config kernels=fa3"},
		{name: "-H with the default file merges", flags: Flags{Hosts: "x"}, env: withDefault, want: "x=x/sglang.service/auto/9000 ssh= kernels=kdtree-verify"},
		{name: "-H alone", flags: Flags{Hosts: "x,deploy@h:22"}, env: noDefault,
			want: "x=x/sglang.service/auto/30000 deploy@h:22=deploy@h:22/sglang.service/auto/30000 ssh= kernels=kdtree-verify"},
		{name: "-u over the file's units", flags: Flags{Path: vllm, Unit: "infer"}, env: noDefault,
			want: "gpu1=gpu1/infer.service/vllm/8000 gpu2=deploy@10.0.0.2:2222/infer.service/vllm/8000 ssh=" + dir + "/ssh_config kernels=fa3"},
		{name: "-u and -H with a file", flags: Flags{Path: vllm, Hosts: "x", Unit: "infer.service"}, env: noDefault,
			want: "x=x/infer.service/vllm/8000 ssh=" + dir + "/ssh_config kernels=fa3"},
		{name: "-F over the file's ssh_config", flags: Flags{Path: vllm, SSHConfig: "my_ssh"}, env: noDefault, args: []string{"gpu1"},
			want: "gpu1=gpu1/vllm.service/vllm/8000 ssh=my_ssh kernels=fa3"},
		{name: "groups cut to -H's hosts", flags: Flags{Path: vllm, Hosts: "gpu2,x"}, env: noDefault, args: []string{"rack-a"},
			want: "gpu2=deploy@10.0.0.2:2222/vllm-b.service/vllm/8000 ssh=" + dir + "/ssh_config kernels=fa3"},
		{name: "env names a missing file", env: with(withDefault, EnvConfig, filepath.Join(dir, "gone.yaml")), err: "$BRINGUP_CONFIG: config: open " + dir + "/gone.yaml"},
		{name: "--config names a missing file", flags: Flags{Path: filepath.Join(dir, "gone.yaml"), Hosts: "x"}, env: withDefault, err: "config: open " + dir + "/gone.yaml"},
		{name: "nothing at all", env: noDefault, err: "no config at " + dir + "/nohome/.config/bringup/config.yaml: write one with `bringup init HOST...`, set $BRINGUP_CONFIG"},
		{name: "bad -u", flags: Flags{Path: vllm, Unit: "a b"}, env: noDefault, err: `-u: invalid unit name "a b"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, hosts, err := tc.flags.Open(func(k string) string { return tc.env[k] }, tc.args)
			if tc.err != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, h := range hosts {
				got = append(got, fmt.Sprintf("%s=%s/%s/%s/%d", h.Name, h.SSH, h.Unit, h.Engine, h.Probe.Port))
			}
			var ks []string
			for _, k := range cfg.Kernels.Kernels {
				ks = append(ks, k.Name)
			}
			got = append(got, "ssh="+cfg.SSHConfig, "kernels="+strings.Join(ks, ","))
			if s := strings.Join(got, " "); s != tc.want {
				t.Errorf("got  %s\nwant %s", s, tc.want)
			}
		})
	}
}

// with is m and k=v.
func with(m map[string]string, k, v string) map[string]string {
	out := map[string]string{k: v}
	for a, b := range m {
		out[a] = b
	}
	return out
}

// TestSourcePrecedence: --source over the file's source:, which is ssh
// when absent; victorialogs without a URL keeps the file's.
func TestSourcePrecedence(t *testing.T) {
	dir := t.TempDir()
	store := filepath.Join(dir, "store.yaml")
	if err := os.WriteFile(store, []byte("hosts: [gpu1]\nsource: {kind: victorialogs, url: \"http://10.0.0.9:9428/\"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	via := filepath.Join(dir, "via.yaml")
	if err := os.WriteFile(via, []byte("hosts: [gpu1]\nsource: {kind: victorialogs, url: \"http://10.0.0.9:9428/\", via: ops@bastion:2222}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(dir, "plain.yaml")
	if err := os.WriteFile(plain, []byte("hosts: [gpu1]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		flags Flags
		want  Source
		err   string
	}{
		{flags: Flags{Path: store}, want: Source{Kind: SourceVictoriaLogs, URL: "http://10.0.0.9:9428"}},
		{flags: Flags{Path: plain}, want: Source{}},
		{flags: Flags{Path: store, Source: "ssh"}, want: Source{Kind: SourceSSH}},
		{flags: Flags{Path: plain, Source: "victorialogs=http://127.0.0.1:9428"}, want: Source{Kind: SourceVictoriaLogs, URL: "http://127.0.0.1:9428"}},
		{flags: Flags{Path: store, Source: "victorialogs=http://127.0.0.1:1"}, want: Source{Kind: SourceVictoriaLogs, URL: "http://127.0.0.1:1"}},
		{flags: Flags{Path: store, Source: "victorialogs"}, want: Source{Kind: SourceVictoriaLogs, URL: "http://10.0.0.9:9428"}},
		{flags: Flags{Path: via}, want: Source{Kind: SourceVictoriaLogs, URL: "http://10.0.0.9:9428", Via: "ops@bastion:2222"}},
		{flags: Flags{Path: via, Source: "victorialogs"}, want: Source{Kind: SourceVictoriaLogs, URL: "http://10.0.0.9:9428", Via: "ops@bastion:2222"}},
		// Another store is another way to it: the file's via goes with its url.
		{flags: Flags{Path: via, Source: "victorialogs=http://127.0.0.1:1"}, want: Source{Kind: SourceVictoriaLogs, URL: "http://127.0.0.1:1"}},
		{flags: Flags{Path: plain, Source: "victorialogs"}, err: "--source victorialogs: no url: pass --source victorialogs=http://HOST:9428 or set source.url in the config"},
		{flags: Flags{Path: plain, Source: "loki=http://x"}, err: `--source: unknown source "loki": want ssh or victorialogs`},
		{flags: Flags{Path: plain, Source: "ssh=http://x"}, err: "--source: ssh takes no URL"},
		{flags: Flags{Path: plain, Source: "victorialogs=ftp://x"}, err: `--source: "ftp://x": want http://HOST:PORT`},
	} {
		cfg, _, err := tc.flags.Open(func(string) string { return "" }, nil)
		if tc.err != "" {
			if err == nil || !strings.HasPrefix(err.Error(), tc.err) {
				t.Errorf("%+v: error %v, want %q", tc.flags, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%+v: %v", tc.flags, err)
		}
		if cfg.Source != tc.want {
			t.Errorf("%+v: source %+v, want %+v", tc.flags, cfg.Source, tc.want)
		}
	}
}
