package doctor

import (
	"fmt"
	"strings"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote/deploy"
	"github.com/bringup-dev/bringup/remote/live"
	"github.com/bringup-dev/bringup/remote/sshx"
)

// Scope is what a login needs to run as root for bringup's actions on
// host r: its unit, the drop-ins of every kernel of the catalog (under
// /etc and /run), and the kernels' deployed directories. tools maps a
// program to its path on the host (nil: /usr/bin).
func Scope(r live.Options, user string, tools map[string]string) sshx.Scope {
	s := sshx.Scope{User: user, Units: []string{r.Unit}, RecordDir: deploy.DefaultRecordDir, Tools: tools}
	for _, k := range r.Kernels.Kernels {
		if kernels.CheckDropInNames(r.Unit, k.Name) == nil {
			s.DropIns = append(s.DropIns, kernels.DropInPath(r.Unit, k.Name, false), kernels.DropInPath(r.Unit, k.Name, true))
		}
		if k.RemoteDir != "" {
			s.KernelDirs = append(s.KernelDirs, k.RemoteDir)
		}
	}
	return s
}

// scopeTools are the programs the root commands run.
func scopeTools() []string {
	return []string{"systemctl", "mkdir", "rm", "install", "mv", "cat", "tar", "rsync"}
}

// execer runs a command on the host as the login.
type execer func(cmd string) (stdout, stderr string, code int, err error)

// sudoCheck asks sudo (`sudo -n -l CMD`, which runs nothing) whether the
// login may run each root command bringup uses on this host, and when it
// may not, gives the exact sudoers rule that allows them and nothing else.
func sudoCheck(exec execer, r live.Options) Check {
	const name = "sudo"
	user, _, _, err := exec("id -un")
	if err != nil {
		return Check{name, Fail, "id -un: " + err.Error(), ""}
	}
	tools, missing := hostTools(exec)
	scope := Scope(r, user, tools)
	rule, rerr := sshx.SudoersRule(scope)
	if rerr != nil {
		return Check{name, Warn, "no sudoers rule can name bringup's root commands here: " + rerr.Error(), "connect as root"}
	}
	fix := fmt.Sprintf("let %s run exactly these as root (visudo -f /etc/sudoers.d/bringup-%s), or connect as root:\n%s", user, user, indent(rule))
	cmds := scope.Commands()
	var script strings.Builder
	for _, c := range cmds {
		script.WriteString(c.CheckLine() + " >/dev/null 2>&1; echo $?\n")
	}
	out, _, _, err := exec(script.String())
	if err != nil {
		return Check{name, Fail, "sudo -n -l: " + err.Error(), ""}
	}
	codes := strings.Fields(out)
	var refused []string
	for i, c := range cmds {
		if i >= len(codes) || codes[i] != "0" {
			refused = append(refused, c.String())
		}
	}
	noTools := ""
	if len(missing) > 0 {
		// Without the program its command cannot run, whatever sudo says.
		noTools = fmt.Sprintf("; not on the host: %s (install them)", strings.Join(missing, ", "))
	}
	if len(refused) == 0 {
		st := OK
		if noTools != "" {
			st, fix = Warn, "install "+strings.Join(missing, ", ")+" on the host"
		} else {
			fix = ""
		}
		return Check{name, st, fmt.Sprintf("%s may run the %d root commands actions use, each through sudo -n (checked with sudo -n -l)%s", user, len(cmds), noTools), fix}
	}
	actions := "actions (mode, redeploy, restart, stop, reset-failed) will fail; watching works without them"
	if len(refused) == len(cmds) {
		if _, serr, _, _ := exec(cmds[0].CheckLine()); strings.Contains(serr, "password is required") {
			return Check{name, Warn, fmt.Sprintf("sudo on %s needs a password for %s: %s%s", r.Name, user, actions, noTools), fix}
		}
		return Check{name, Warn, fmt.Sprintf("%s may not run bringup's root commands with sudo -n: %s%s", user, actions, noTools), fix}
	}
	first := refused[0]
	if len(refused) > 1 {
		first += fmt.Sprintf(" and %d more", len(refused)-1)
	}
	return Check{name, Warn, fmt.Sprintf("sudo lets %s run %d of the %d root commands actions use; refused: %s%s", user, len(cmds)-len(refused), len(cmds), first, noTools), fix}
}

// hostTools resolves the programs of the root commands on the host (one
// exec): the rule names each by the path sudo will find.
func hostTools(exec execer) (map[string]string, []string) {
	var script strings.Builder
	for _, t := range scopeTools() {
		script.WriteString("command -v " + t + " || echo -\n")
	}
	out, _, _, err := exec(script.String())
	lines := strings.Split(out, "\n")
	tools := map[string]string{}
	var missing []string
	for i, t := range scopeTools() {
		if err != nil || i >= len(lines) || !strings.HasPrefix(lines[i], "/") {
			missing = append(missing, t)
			continue
		}
		tools[t] = lines[i]
	}
	return tools, missing
}

func indent(s string) string {
	return "        " + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n        ")
}
