package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/remote/testkit/e2e"
)

// TestCompleteWords: commands, each command's own flags (read from its
// --help), nothing for a flag's value (the shell completes files), and
// host and group names from the config in force (--config, else
// $BRINGUP_CONFIG).
func TestCompleteWords(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(cfg, []byte("hosts: [gpu1, gpu2, node7]\ngroups: {rack-a: [gpu1, gpu2]}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		words []string
		env   string // BRINGUP_CONFIG
		want  string
	}{
		{[]string{"wa"}, "", "watch"},
		{[]string{"re"}, "", "redeploy restart reset-failed replay"},
		{[]string{"watch", "--j"}, "", "--json"},
		{[]string{"demo", "--sc"}, "", "--scenario"},
		{[]string{"restart", "--fo"}, "", "--force"},
		{[]string{"watch", "--fo"}, "", ""}, // watch has no --force
		{[]string{"watch", "--config", ""}, "", ""},
		{[]string{"watch", "--timeout", "1"}, "", ""},
		{[]string{"help", "st"}, "", "status stop"},
		{[]string{"restart", ""}, cfg, "gpu1 gpu2 node7 rack-a"},
		{[]string{"restart", "g"}, cfg, "gpu1 gpu2"},
		{[]string{"mode", "-c", cfg, "r"}, "", "rack-a"},
		{[]string{"mode", "--config=" + cfg, "n"}, "", "node7"},
		{[]string{"restart", "g"}, filepath.Join(dir, "missing.yaml"), ""},
		{[]string{"g"}, cfg, "gpu1 gpu2"}, // the console takes hosts too
	} {
		var out, errOut syncBuffer
		e := testEnv(&out, &errOut)
		e.getenv = func(k string) string {
			switch k {
			case "BRINGUP_CONFIG":
				return tc.env
			case "HOME":
				return dir
			}
			return ""
		}
		var words []string
		for _, c := range completeWords(context.Background(), e, tc.words) {
			words = append(words, c.Word)
		}
		if got := strings.Join(words, " "); got != tc.want {
			t.Errorf("%q: %q, want %q", tc.words, got, tc.want)
		}
		if out.String() != "" {
			t.Errorf("%q: completing printed %q", tc.words, out.String())
		}
	}
}

// TestCompletionScripts checks each shell's script with the shell's own
// syntax check (-n), and runs the bash one as bash does: _bringup over the
// built binary completing a command and a flag.
func TestCompletionScripts(t *testing.T) {
	e2e.Require(t, e2e.Command("bash"), e2e.Command("zsh"), e2e.Command("fish")) // builds and runs the binary
	bin := buildBringup(t)
	script, err := exec.Command(bin, "completion", "bash").Output()
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("bash", "-n", "-c", string(script)).CombinedOutput(); err != nil {
		t.Fatalf("bash -n: %v\n%s", err, out)
	}
	for words, want := range map[string]string{"bringup wtc": "", "bringup wa": "watch", "bringup watch --ti": "--timeout"} {
		n := len(strings.Fields(words)) - 1
		cmd := exec.Command("bash", "-c", string(script)+"\nCOMP_WORDS=("+words+"); COMP_CWORD="+string(rune('0'+n))+"; _bringup; echo \"${COMPREPLY[*]}\"")
		cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(bin)+":"+os.Getenv("PATH"))
		out, err := cmd.CombinedOutput()
		if got := strings.TrimSpace(string(out)); err != nil || got != want {
			t.Errorf("%s<TAB>: %q (%v), want %q", words, got, err, want)
		}
	}
	for _, sh := range []string{"zsh", "fish"} {
		script, err := exec.Command(bin, "completion", sh).Output()
		if err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(sh, "-n", "-c", string(script)).CombinedOutput(); err != nil {
			t.Errorf("%s -n: %v\n%s", sh, err, out)
		}
	}
	// fish can be asked what it would complete.
	cmd := exec.Command("fish", "-c", "bringup completion fish | source; complete -C 'bringup wa'; complete -C 'bringup watch --ti'")
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(bin)+":"+os.Getenv("PATH"))
	if out, err := cmd.CombinedOutput(); err != nil || !strings.HasPrefix(string(out), "watch\tprint phase changes") || !strings.Contains(string(out), "--timeout\tgive up after D") {
		t.Errorf("fish completes %q (%v), want watch and --timeout, each with its description", out, err)
	}
}

// TestCompletionInTmux types `bringup wa<TAB>` into bash and zsh as a
// person would: the word is completed with the space after it (both
// scripts once asked for none), and a second TAB on `bringup re` lists
// the commands with their descriptions.
func TestCompletionInTmux(t *testing.T) {
	e2e.Require(t, e2e.Command("tmux"), e2e.Command("bash"), e2e.Command("zsh"))
	bin := buildBringup(t)
	path := filepath.Dir(bin) + ":" + os.Getenv("PATH")
	for _, sh := range []struct{ name, start, setup, listed string }{
		{"bash", "bash --norc --noprofile", "source <(bringup completion bash)", "restart       (restart the unit)"},
		{"zsh", "zsh -f", "autoload -U compinit && compinit -u && source <(bringup completion zsh)", "restart       -- restart the unit"},
	} {
		t.Run(sh.name, func(t *testing.T) {
			p := startTmux(t, 120, 20, "PS1='$ ' PROMPT='$ ' HOME="+t.TempDir()+" PATH="+path+" exec "+sh.start)
			p.keys(sh.setup, "Enter")
			p.keys("bringup wa", "Tab")
			time.Sleep(500 * time.Millisecond)
			p.keys("X")
			p.waitFor("bringup watch X", regexp.MustCompile(`(?m)bringup watch X\s*$`), 10*time.Second)
			p.keys("C-u", "bringup re", "Tab", "Tab")
			p.waitFor("the listed commands", regexp.MustCompile(regexp.QuoteMeta(sh.listed)), 10*time.Second)
		})
	}
}
