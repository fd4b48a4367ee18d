package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

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
		if got := strings.Join(completeWords(context.Background(), e, tc.words), " "); got != tc.want {
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
	if out, err := cmd.CombinedOutput(); err != nil || !strings.HasPrefix(string(out), "watch\n") || !strings.Contains(string(out), "--timeout") {
		t.Errorf("fish completes %q (%v), want watch and --timeout", out, err)
	}
}
