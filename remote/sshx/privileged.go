package sshx

import (
	"fmt"
	"path"
	"strconv"
	"strings"
)

// RootCmd is one command bringup runs as root on a host: a program from a
// small fixed set with a fixed argument shape, never a shell. A non-root
// login runs it through `sudo -n`, so that a sudoers rule can allow each
// command, exactly, one by one (SudoersRule renders that rule). Whatever
// a command needs beyond its arguments (a file's content, a list of
// files) it reads from stdin: no argument grows with the size of a
// change.
//
// The constructors below (UnitCmd … DeployRecordCmd) are the whole table:
// remote/systemd, remote/dropin and remote/deploy build their privileged
// steps from them and from nothing else, and Scope.Commands lists them
// for the sudoers rule and for the doctor's check.
type RootCmd struct {
	// Tool is the program; sudo finds it on its secure_path, the rule
	// names it by its absolute path on the host.
	Tool string
	// Args are its arguments, each one word.
	Args []string
	// pattern marks Args that are sudoers wildcards (only the environ
	// shapes): rendered as they are, never sent.
	pattern bool
}

// Line is the command line that runs c over an exec channel: the command
// itself for the root login, through `sudo -n --` otherwise (-n: a sudo
// that wants a password fails at once instead of prompting).
func (c RootCmd) Line(sudo bool) string {
	var b strings.Builder
	if sudo {
		b.WriteString("sudo -n -- ")
	}
	b.WriteString(c.Tool)
	for _, a := range c.Args {
		b.WriteByte(' ')
		b.WriteString(shellWord(a))
	}
	return b.String()
}

// shellWord is a as one shell word: as it is when no character of it is
// special to the shell (the command reads as in the sudoers rule),
// quoted otherwise.
func shellWord(a string) string {
	if a == "" {
		return ShellQuote(a)
	}
	for _, r := range a {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-@%+:,=", r)) {
			return ShellQuote(a)
		}
	}
	return a
}

// CheckLine asks sudo whether the login may run c, without running it
// (`sudo -n -l -- CMD`: exit 0 and the command printed when allowed).
func (c RootCmd) CheckLine() string {
	return "sudo -n -l -- " + c.Line(false)
}

// String is the command as a person reads it (and as a log shows it).
func (c RootCmd) String() string { return c.Line(false) }

// The unit verbs UnitCmd accepts.
const (
	VerbRestart     = "restart"
	VerbStart       = "start"
	VerbStop        = "stop"
	VerbResetFailed = "reset-failed"
)

// unitVerbs is every verb UnitCmd builds, in the rule's order.
func unitVerbs() []string {
	return []string{VerbRestart, VerbStart, VerbStop, VerbResetFailed}
}

// DaemonReloadCmd makes systemd re-read unit files and drop-ins.
func DaemonReloadCmd() RootCmd {
	return RootCmd{Tool: "systemctl", Args: []string{"--no-ask-password", "daemon-reload"}}
}

// UnitCmd runs a job on unit: verb is one of VerbRestart, VerbStart,
// VerbStop, VerbResetFailed.
func UnitCmd(verb, unit string) RootCmd {
	return RootCmd{Tool: "systemctl", Args: []string{"--no-ask-password", verb, "--", unit}}
}

// DropInTemp is the one temp file a drop-in is written to before it is
// renamed into place: beside it (same directory, same file system),
// hidden, and not ending in .conf, so systemd never reads it. A temp file
// left by a cut run is removed (DropInCleanCmd) or overwritten by the
// next write.
func DropInTemp(file string) string {
	dir, base := path.Split(file)
	return path.Join(dir, ".bringup-"+base+".tmp")
}

// DropInMkdirCmd makes the drop-in directory of file.
func DropInMkdirCmd(file string) RootCmd {
	return RootCmd{Tool: "mkdir", Args: []string{"-p", "--", path.Dir(file)}}
}

// DropInCleanCmd removes the temp file of file a cut run left.
func DropInCleanCmd(file string) RootCmd {
	return RootCmd{Tool: "rm", Args: []string{"-f", "--", DropInTemp(file)}}
}

// DropInInstallCmd writes stdin to file's temp file, mode 0644 whatever
// the umask.
func DropInInstallCmd(file string) RootCmd {
	return RootCmd{Tool: "install", Args: []string{"-m", "0644", "-T", "--", "/dev/stdin", DropInTemp(file)}}
}

// DropInRenameCmd renames file's temp file over file (rename(2): atomic).
func DropInRenameCmd(file string) RootCmd {
	return RootCmd{Tool: "mv", Args: []string{"-f", "-T", "--", DropInTemp(file), file}}
}

// DropInRemoveCmd removes file (bringup's own drop-in, on undo).
func DropInRemoveCmd(file string) RootCmd {
	return RootCmd{Tool: "rm", Args: []string{"-f", "--", file}}
}

// EnvironCmd prints the environment process pid started with. The rule
// allows it for every pid by shape (one line per digit count, each digit
// a [0-9]: a sudoers `*` would match across arguments).
func EnvironCmd(pid int) RootCmd {
	return RootCmd{Tool: "cat", Args: []string{"--", "/proc/" + strconv.Itoa(pid) + "/environ"}}
}

// maxPIDDigits is the length of the largest pid Linux hands out
// (pid_max ≤ 4194304).
const maxPIDDigits = 7

// environShapes are EnvironCmd's rule lines, one per pid length.
func environShapes() []RootCmd {
	var out []RootCmd
	for n := 1; n <= maxPIDDigits; n++ {
		out = append(out, RootCmd{Tool: "cat", Args: []string{"--", "/proc/" + strings.Repeat("[0-9]", n) + "/environ"}, pattern: true})
	}
	return out
}

// DeployStage is the root-owned staging directory of a deployed
// directory: beside it, on its file system, so that the final renames are
// atomic. It holds files/ (the changed files at their relative paths) and
// record.json while a deploy runs, and nothing afterwards.
func DeployStage(dir string) string {
	return path.Join(path.Dir(dir), "."+path.Base(dir)+".bringup-stage")
}

// DeployRecordFile is where the deploy record of dir lives in recordDir:
// dir's path escaped as systemd escapes unit names ("/opt/kdtree/site" →
// "opt-kdtree-site.json"), so that distinct directories get distinct
// files.
func DeployRecordFile(recordDir, dir string) string {
	p := strings.Trim(dir, "/")
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '/':
			b.WriteByte('-')
		case c == '_' || c == '.' && i > 0 || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, `\x%02x`, c)
		}
	}
	return path.Join(recordDir, b.String()+".json")
}

// DeployCleanCmd removes dir's staging directory (what a cut run left).
func DeployCleanCmd(dir string) RootCmd {
	return RootCmd{Tool: "rm", Args: []string{"-rf", "--", DeployStage(dir)}}
}

// DeployMkdirCmd makes the staging directory, dir itself and recordDir.
func DeployMkdirCmd(dir, recordDir string) RootCmd {
	return RootCmd{Tool: "mkdir", Args: []string{"-p", "--", DeployStage(dir), dir, recordDir}}
}

// DeployUnpackCmd unpacks a tar archive read from stdin into the staging
// directory. GNU tar strips a leading "/" or "../" from member names and
// refuses one with ".." elsewhere, so nothing lands outside it; as root
// with --no-same-owner it makes every file root's and drops set-uid and
// set-gid bits.
func DeployUnpackCmd(dir string) RootCmd {
	return RootCmd{Tool: "tar", Args: []string{"-x", "--no-same-owner", "-f", "-", "-C", DeployStage(dir)}}
}

// DeployApplyCmd makes dir equal to the staging directory's files/ where
// the include rules on stdin (NUL-separated, rsync's --include-from
// syntax: patterns, "- " for an exclude, no merges) let it: included
// files are copied over (into a holding directory first, then all renamed
// into place at the end: --delay-updates), included entries the staging
// tree lacks are deleted, recursively for a directory, and whatever the
// rules exclude is neither sent nor deleted. rsync works inside the two
// directories only.
func DeployApplyCmd(dir string) RootCmd {
	return RootCmd{Tool: "rsync", Args: []string{"-r", "--ignore-times", "--perms", "--delay-updates", "--delete", "--force",
		"--from0", "--include-from=-", "--", DeployStage(dir) + "/files/", dir + "/"}}
}

// DeployRecordCmd puts the staged record in place (a temp file, then a
// rename).
func DeployRecordCmd(dir, recordDir string) RootCmd {
	return RootCmd{Tool: "rsync", Args: []string{"--ignore-times", "--perms", "--", DeployStage(dir) + "/record.json", DeployRecordFile(recordDir, dir)}}
}

// Scope is what one login may do as root on a host: act on its units,
// write bringup's drop-ins and deploy its kernel directories.
type Scope struct {
	User       string   // the login
	Units      []string // units restarted, started, stopped, reset
	DropIns    []string // bringup's drop-in files (kernels.DropInPath), absolute
	KernelDirs []string // deployed directories, absolute
	RecordDir  string   // where deploy records go (deploy.DefaultRecordDir)
	// Tools maps a program to its absolute path on the host; a program
	// not in it is taken to be /usr/bin/NAME (true on merged-/usr Debian,
	// Ubuntu, Fedora and RHEL).
	Tools map[string]string
}

// Commands lists every command of the scope, in the rule's order: the
// daemon-reload, the unit verbs, the drop-in steps, the environ shapes,
// the deploy steps. Environ shapes appear as one concrete pid per length
// (1, 12, …), so that each can be checked with `sudo -l`.
func (s Scope) Commands() []RootCmd {
	out := []RootCmd{DaemonReloadCmd()}
	for _, u := range s.Units {
		for _, v := range unitVerbs() {
			out = append(out, UnitCmd(v, u))
		}
	}
	for _, f := range s.DropIns {
		out = append(out, DropInMkdirCmd(f), DropInCleanCmd(f), DropInInstallCmd(f), DropInRenameCmd(f), DropInRemoveCmd(f))
	}
	pid := 0
	for n := 1; n <= maxPIDDigits; n++ {
		pid = pid*10 + n
		out = append(out, EnvironCmd(pid))
	}
	return dedupe(append(out, s.DeployCommands()...))
}

// DeployCommands are the deploy steps of s.KernelDirs alone: what a
// non-root redeploy checks with `sudo -l` before it sends anything.
func (s Scope) DeployCommands() []RootCmd {
	var out []RootCmd
	for _, d := range s.KernelDirs {
		out = append(out, DeployCleanCmd(d), DeployMkdirCmd(d, s.RecordDir), DeployUnpackCmd(d), DeployApplyCmd(d), DeployRecordCmd(d, s.RecordDir))
	}
	return out
}

// ruleCommands is Commands with the environ shapes in place of the
// concrete pids.
func (s Scope) ruleCommands() []RootCmd {
	var out []RootCmd
	environ := false
	for _, c := range s.Commands() {
		if c.Tool == "cat" { // cat is only ever EnvironCmd
			if !environ {
				out = append(out, environShapes()...)
				environ = true
			}
			continue
		}
		out = append(out, c)
	}
	return out
}

func dedupe(cmds []RootCmd) []RootCmd {
	seen := map[string]bool{}
	out := cmds[:0]
	for _, c := range cmds {
		if k := c.String(); !seen[k] {
			seen[k] = true
			out = append(out, c)
		}
	}
	return out
}

// tool is the absolute path of program name on the host.
func (s Scope) tool(name string) string {
	if p, ok := s.Tools[name]; ok && p != "" {
		return p
	}
	return "/usr/bin/" + name
}

// SudoersRule renders the sudoers lines that allow s.User exactly the
// commands of s as root without a password, one line per command, no
// shell, no wildcard but the environ pid digits. Put it in a file of
// /etc/sudoers.d with `visudo -f`. It refuses names that would need
// quoting beyond sudoers' backslash escapes.
//
// The rule narrows what a mistake or a stolen login can do; it is not a
// wall against a hostile login: a drop-in may set ExecStartPre=, and a
// kernel directory is code the service runs, so writing either is as
// strong as the service's own user.
func SudoersRule(s Scope) (string, error) {
	if err := checkSudoersUser(s.User); err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# bringup: the root commands of %s (units %s; kernel dirs %s).\n", s.User, orNone(s.Units), orNone(s.KernelDirs))
	fmt.Fprintf(&b, "# Install with: visudo -f /etc/sudoers.d/bringup-%s\n", s.User)
	for _, c := range s.ruleCommands() {
		line, err := s.sudoersCommand(c)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "%s ALL=(root) NOPASSWD: %s\n", s.User, line)
	}
	return b.String(), nil
}

func orNone(l []string) string {
	if len(l) == 0 {
		return "none"
	}
	return strings.Join(l, ", ")
}

// sudoersCommand renders c as a sudoers Cmnd: the tool's absolute path
// and each argument escaped.
func (s Scope) sudoersCommand(c RootCmd) (string, error) {
	tool := s.tool(c.Tool)
	if !path.IsAbs(tool) || path.Clean(tool) != tool {
		return "", fmt.Errorf("sudoers rule: %s at %q: want a clean absolute path", c.Tool, tool)
	}
	words := []string{tool}
	for _, a := range c.Args {
		if c.pattern {
			words = append(words, a)
			continue
		}
		w, err := sudoersWord(a)
		if err != nil {
			return "", fmt.Errorf("sudoers rule for %s: %w", c, err)
		}
		words = append(words, w)
	}
	if _, err := sudoersWord(tool); err != nil {
		return "", fmt.Errorf("sudoers rule: %w", err)
	}
	return strings.Join(words, " "), nil
}

// sudoersWord escapes one argument for a sudoers command line: ',', ':',
// '=' and '\' take a backslash; anything that sudoers would read as a
// wildcard, a comment, a quote or a word break is refused rather than
// escaped, so that what the rule allows is plain to read.
func sudoersWord(a string) (string, error) {
	if a == "" {
		return "", fmt.Errorf("empty argument")
	}
	var b strings.Builder
	for _, r := range a {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', strings.ContainsRune("/._-@+%~^", r):
			b.WriteRune(r)
		case strings.ContainsRune(`,:=\`, r):
			b.WriteByte('\\')
			b.WriteRune(r)
		default:
			return "", fmt.Errorf("argument %q: character %q has no plain form in a sudoers rule", a, r)
		}
	}
	return b.String(), nil
}

// checkSudoersUser accepts POSIX-portable user names.
func checkSudoersUser(u string) error {
	if u == "" || len(u) > 32 || u[0] == '-' || u == "ALL" {
		return fmt.Errorf("sudoers rule: user name %q", u)
	}
	for _, r := range u {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._-", r)) {
			return fmt.Errorf("sudoers rule: user name %q: character %q not allowed", u, r)
		}
	}
	return nil
}
