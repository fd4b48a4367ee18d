package sshx

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/bringup-dev/bringup/remote/testkit/e2e"
)

// copyCorpus copies testdata/ssh_config to a temp dir, replacing @DIR@ with
// that dir so Include paths are absolute.
func copyCorpus(t *testing.T) string {
	t.Helper()
	src := filepath.Join("testdata", "ssh_config")
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		out := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(out, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(out, []byte(strings.ReplaceAll(string(b), "@DIR@", dst)), 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// corpusAliases reads the "# aliases:" header of a corpus file.
func corpusAliases(t *testing.T, file string) []string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(b), "\n")
	list, ok := strings.CutPrefix(first, "# aliases:")
	if !ok {
		return nil
	}
	return strings.Fields(list)
}

// dropLegacy removes the default keys newer ssh versions no longer list, so
// ssh -G of any 9.x/10.x compares with the parser's default list.
func dropLegacy(files []string) []string {
	var out []string
	for _, f := range files {
		if strings.HasSuffix(f, "/.ssh/id_xmss") || strings.HasSuffix(f, "/.ssh/id_dsa") {
			continue
		}
		out = append(out, f)
	}
	return out
}

// TestCorpusMatchesSSHG resolves every alias of every corpus file with
// `ssh -G -F file alias` and with a Resolver that reads each file once
// (its parser, no ssh -G), and compares every field of the Config; the
// Resolver given the ssh binary must answer those aliases from its parser.
func TestCorpusMatchesSSHG(t *testing.T) {
	e2e.Require(t, e2e.Command("ssh"))
	sshPath, err := exec.LookPath("ssh")
	if err != nil {
		t.Fatal(err)
	}
	dir := copyCorpus(t)
	files, _ := filepath.Glob(filepath.Join(dir, "*.conf"))
	n := 0
	for _, f := range files {
		parser, err := NewResolver(ResolveOptions{ConfigFile: f, SSHPath: "-"})
		if err != nil {
			t.Fatal(err)
		}
		withSSH, err := NewResolver(ResolveOptions{ConfigFile: f, SSHPath: sshPath})
		if err != nil {
			t.Fatal(err)
		}
		for _, alias := range corpusAliases(t, f) {
			t.Run(filepath.Base(f)+"/"+alias, func(t *testing.T) {
				ctx := context.Background()
				want, err := Resolve(ctx, alias, ResolveOptions{ConfigFile: f, SSHPath: sshPath})
				if err != nil {
					t.Fatalf("ssh -G: %v", err)
				}
				got, err := parser.Resolve(ctx, alias)
				if err != nil {
					t.Fatalf("parser: %v", err)
				}
				if want.Source != SourceSSHG || got.Source != SourceParser {
					t.Fatalf("sources %q %q", want.Source, got.Source)
				}
				want.IdentityFiles = dropLegacy(want.IdentityFiles)
				want.Source = got.Source
				if !reflect.DeepEqual(want, got) {
					t.Errorf("alias %s:\nssh -G %+v\nparser %+v", alias, want, got)
				}
				if c, err := withSSH.Resolve(ctx, alias); err != nil || c.Source != SourceParser {
					t.Errorf("Resolver with ssh: %v, source %q: want the parser's answer", err, c.Source)
				}
			})
			n++
		}
	}
	if n < 34 {
		t.Fatalf("corpus has only %d aliases", n)
	}
}

func TestParserErrorsNameFileAndLine(t *testing.T) {
	dir := copyCorpus(t)
	for _, tc := range []struct {
		file, alias, want string
		line              int
	}{
		{"unsupported.conf", "x", "ciphers", 2},
		{"match.conf", "x", "Match exec", 1},
	} {
		_, err := Resolve(context.Background(), tc.alias, ResolveOptions{ConfigFile: filepath.Join(dir, tc.file), SSHPath: "-"})
		var ce *ConfigError
		if !errors.As(err, &ce) {
			t.Fatalf("%s: want ConfigError, got %v", tc.file, err)
		}
		if ce.Line != tc.line || filepath.Base(ce.File) != tc.file || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v (line %d)", tc.file, err, ce.Line)
		}
		if !IsPermanent(err) {
			t.Errorf("config error should be permanent")
		}
	}
	// A directive the parser does not know in a block that does not apply
	// cannot change the answer: the host resolves (a Resolver does not send
	// it to ssh -G).
	if _, err := Resolve(context.Background(), "other", ResolveOptions{ConfigFile: filepath.Join(dir, "unsupported.conf"), SSHPath: "-"}); err != nil {
		t.Errorf("inactive unknown directive: %v", err)
	}
}

// TestResolverFallsBackPerHost: a Resolver given an ssh binary answers from
// its parser where it is exact and runs ssh -G for the hosts it is not (a
// Match exec they reach, a directive it does not know in their block) —
// those alone. The ssh binary here is a script that records its calls.
func TestResolverFallsBackPerHost(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config")
	mustWrite(t, cfg, []byte(`Host plain*
  User p
Host odd
  Ciphers aes128-ctr
Match originalhost ex* exec "test -e /"
  User e
Host *
  Port 2200
`), 0o644)
	calls := filepath.Join(dir, "calls")
	fake := filepath.Join(dir, "ssh")
	mustWrite(t, fake, []byte("#!/bin/sh\necho \"$@\" >> "+calls+"\nfor a; do h=$a; done\necho hostname $h\necho user from-ssh-g\necho port 22\n"), 0o755)
	r, err := NewResolver(ResolveOptions{ConfigFile: cfg, SSHPath: fake, Home: dir, User: "me"})
	if err != nil {
		t.Fatal(err)
	}
	for alias, want := range map[string]Config{
		"plain1": {User: "p", Port: 2200, Source: SourceParser},
		"other":  {User: "me", Port: 2200, Source: SourceParser},
		"odd":    {User: "from-ssh-g", Port: 22, Source: SourceSSHG},
		"ex1":    {User: "from-ssh-g", Port: 22, Source: SourceSSHG},
	} {
		got, err := r.Resolve(context.Background(), alias)
		if err != nil {
			t.Fatalf("%s: %v", alias, err)
		}
		if got.User != want.User || got.Port != want.Port || got.Source != want.Source {
			t.Errorf("%s: got user %q port %d source %q; want %+v", alias, got.User, got.Port, got.Source, want)
		}
	}
	b, _ := os.ReadFile(calls)
	if got := strings.Count(string(b), "\n"); got != 2 {
		t.Errorf("ssh -G ran %d times, want 2 (odd, ex1):\n%s", got, b)
	}
}

func TestParserKeepsOtherFields(t *testing.T) {
	f := filepath.Join(t.TempDir(), "cfg")
	mustWrite(t, f, []byte(`Host h
  HostName 127.0.0.1
  IdentitiesOnly yes
  StrictHostKeyChecking accept-new
  UserKnownHostsFile ~/kh_%h %d/other
  GlobalKnownHostsFile /etc/none
  ServerAliveInterval 7
  ServerAliveCountMax 5
  ConnectTimeout 9
  HostKeyAlias gpu-alias
  ProxyCommand nc %h %p
`), 0o644)
	cfg, err := Resolve(context.Background(), "h", ResolveOptions{ConfigFile: f, SSHPath: "-", Home: "/home/u", User: "me"})
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.IdentitiesOnly || cfg.StrictHostKeyChecking != "accept-new" || cfg.ServerAliveInterval.Seconds() != 7 ||
		cfg.ServerAliveCountMax != 5 || cfg.ConnectTimeout.Seconds() != 9 || cfg.HostKeyAlias != "gpu-alias" ||
		cfg.ProxyCommand != "nc 127.0.0.1 22" || cfg.User != "me" {
		t.Errorf("cfg = %+v", cfg)
	}
	if !reflect.DeepEqual(cfg.UserKnownHostsFiles, []string{"/home/u/kh_127.0.0.1", "/home/u/other"}) ||
		!reflect.DeepEqual(cfg.GlobalKnownHostsFiles, []string{"/etc/none"}) {
		t.Errorf("known hosts files = %v %v", cfg.UserKnownHostsFiles, cfg.GlobalKnownHostsFiles)
	}
}

func TestParseSSHG(t *testing.T) {
	out := `host g
user alice
hostname 10.0.0.2
port 2222
identitiesonly yes
identityfile ~/.ssh/id_%h
identityfile /abs/key
proxyjump a,b:22
userknownhostsfile ~/.ssh/kh /tmp/kh2
globalknownhostsfile /etc/ssh/ssh_known_hosts
stricthostkeychecking true
serveraliveinterval 5
serveralivecountmax 4
connecttimeout none
hostkeyalias gg
proxycommand ssh -W %h:%p x
`
	cfg, err := parseSSHG([]byte(out), "g", ResolveOptions{Home: "/h", User: "me"})
	if err != nil {
		t.Fatal(err)
	}
	want := Config{
		Alias: "g", HostName: "10.0.0.2", User: "alice", Port: 2222,
		IdentityFiles: []string{"/h/.ssh/id_10.0.0.2", "/abs/key"}, IdentitiesOnly: true,
		ProxyJump: []string{"a", "b:22"}, ProxyCommand: "ssh -W 10.0.0.2:2222 x",
		UserKnownHostsFiles: []string{"/h/.ssh/kh", "/tmp/kh2"}, GlobalKnownHostsFiles: []string{"/etc/ssh/ssh_known_hosts"},
		StrictHostKeyChecking: "yes", ServerAliveInterval: 5e9, ServerAliveCountMax: 4, HostKeyAlias: "gg", Source: SourceSSHG,
	}
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("got  %+v\nwant %+v", cfg, want)
	}
}

func TestParseHop(t *testing.T) {
	for in, want := range map[string]Hop{
		"bastion":             {Host: "bastion"},
		"u@b:2200":            {User: "u", Host: "b", Port: 2200},
		"ssh://root@j4:22":    {User: "root", Host: "j4", Port: 22},
		"[::1]:2222":          {Host: "::1", Port: 2222},
		"me@fe80::1":          {User: "me", Host: "fe80::1"},
		"a.b@host.example.cn": {User: "a.b", Host: "host.example.cn"},
	} {
		got, err := ParseHop(in)
		if err != nil || got != want {
			t.Errorf("ParseHop(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, bad := range []string{"u@:22", "h:99999", "[::1"} {
		if _, err := ParseHop(bad); err == nil {
			t.Errorf("ParseHop(%q) succeeded", bad)
		}
	}
}

func TestMatchPattern(t *testing.T) {
	for _, tc := range []struct {
		pat, s string
		want   bool
	}{
		{"*", "", true}, {"gpu?", "gpu1", true}, {"gpu?", "gpu10", false},
		{"*.lab", "a.b.lab", true}, {"a*b*c", "aXbYc", true}, {"a*b*c", "aXbY", false},
		{"10.0.0.*", "10.0.0.5", true}, {"", "x", false},
	} {
		if got := matchPattern(tc.pat, tc.s); got != tc.want {
			t.Errorf("matchPattern(%q,%q) = %v", tc.pat, tc.s, got)
		}
	}
	if matchHost("gpu-bastion", []string{"gpu*", "!gpu-bastion"}) || !matchHost("gpu1", []string{"gpu*", "!gpu-bastion"}) {
		t.Error("negation")
	}
	if matchHost("box", []string{"!other"}) {
		t.Error("a Host line with only negations never matches")
	}
}

// FuzzSplitLine checks the config line splitter never panics and that
// keywords come back lower-case.
func FuzzSplitLine(f *testing.F) {
	for _, s := range []string{`Host a b`, `HostName="x y"`, `IdentityFile 'a\'b'`, `User = u # c`, `"`, `=`, "\t#x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		key, _, _, err := splitLine(s)
		if err == nil && key != strings.ToLower(key) {
			t.Fatalf("key %q not lower-case", key)
		}
	})
}
