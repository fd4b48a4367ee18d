package testbed

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// The image recipe. Anything that changes what the image holds must change
// imageKey, so recipeVersion is bumped whenever code (not only data) of the
// recipe changes.
const (
	recipeVersion = "3"
	suite         = "bookworm"
	// mirror is the Debian mirror the machine's apt sources already use.
	mirror = "http://deb.debian.org/debian"
	// includePackages are added to debootstrap's minbase: a real systemd as
	// PID 1 with D-Bus and sshd, sudo for the deploy user, python3 for the
	// kernel's sitecustomize, rsync for redeploy, curl for probes from
	// inside a host, systemd-journal-remote for systemd-journal-upload
	// (a host's journal to the log store, Options.LogStore).
	includePackages = "systemd,systemd-sysv,dbus,openssh-server,python3,iproute2,sudo,rsync,curl,systemd-journal-remote"
)

// imageFile is one file the recipe writes into the image.
type imageFile struct {
	Path string
	Mode os.FileMode
	Data string
}

// imageFiles are the files every host shares. Per-host files (keys,
// sudoers, the unit) are bound in at boot instead; see hostFiles.
func imageFiles() []imageFile {
	return []imageFile{
		{"/etc/ssh/sshd_config.d/bringup-testbed.conf", 0o644, `# bringup testbed: keys only. Forwarding is on because bringup reaches
# each host's system D-Bus through SSH (direct-streamlocal channels).
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
HostKey /etc/ssh/ssh_host_ed25519_key
AuthorizedKeysFile .ssh/authorized_keys /etc/ssh/authorized_keys.d/%u
AllowStreamLocalForwarding yes
AllowTcpForwarding yes
UseDNS no
# Tests open many sessions at once (journal streams, probes, commands).
MaxSessions 64
MaxStartups 64:30:128
`},
		{"/opt/kdtree/site/sitecustomize.py", 0o644, `# kdtree-verify: loaded through PYTHONPATH=/opt/kdtree/site. The mode comes
# from KDTREE_MODE (off, validate, on); validate syncs with the host and so
# breaks CUDA graph capture. Stand-in written by bringup's testbed.
import os

KDTREE_MODE = os.environ.get("KDTREE_MODE", "off")
if KDTREE_MODE != "off":
    import kdtree_verify  # noqa: F401
`},
		{"/opt/kdtree/site/kdtree_verify.py", 0o644, `"""kdtree-verify kernel (testbed stand-in)."""

VERSION = "0.1.0"


def verify(tree, reference):
    return tree == reference
`},
		{"/models/demo/config.json", 0o644, `{"architectures": ["LlamaForCausalLM"], "model_type": "llama", "num_hidden_layers": 2}
`},
	}
}

// prepScript runs in the new image (chroot) once, before it is cached.
const prepScript = `set -eu
useradd -m -s /bin/bash deploy
# '*': no password, but not locked, so sshd lets the key in.
usermod -p '*' deploy
# Host keys come per host at boot; the image must not carry shared ones.
rm -f /etc/ssh/ssh_host_*
# Empty: each booted host gets its own machine id.
: > /etc/machine-id
: > /etc/hostname
# Timers that would only add noise (and try the network) on a test host.
for u in apt-daily.timer apt-daily-upgrade.timer dpkg-db-backup.timer e2scrub_all.timer fstrim.timer; do
  rm -f /etc/systemd/system/timers.target.wants/$u
  ln -sf /dev/null /etc/systemd/system/$u
done
install -d -m 0700 /root/.ssh
install -d -m 0755 /etc/ssh/authorized_keys.d /etc/systemd/journald.conf.d /usr/local/bin /opt/kdtree/site /models/demo
# Mount points for the per-host infersim binary and its nvidia-smi name.
: > /usr/local/bin/infersim
chmod 0755 /usr/local/bin/infersim
ln -sf infersim /usr/local/bin/nvidia-smi
apt-get clean
rm -rf /var/lib/apt/lists/*
`

// imageKey names the image by everything that goes into it.
func imageKey() string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%s\n%s\n%s\n%s\n", recipeVersion, suite, mirror, includePackages, prepScript)
	for _, f := range imageFiles() {
		fmt.Fprintf(h, "%s %o %d\n%s", f.Path, f.Mode, len(f.Data), f.Data)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// ensureImage returns the root of the cached image, building it first if
// the cache lacks it. The build goes to a temporary directory that is
// renamed into place at the end, so a killed build never leaves a half
// image under the final name; a lock keeps concurrent runs from building
// it twice.
func ensureImage(ctx context.Context, cacheDir string, logf func(string, ...any)) (string, error) {
	key := imageKey()
	imagesDir := filepath.Join(cacheDir, "images")
	final := filepath.Join(imagesDir, key)
	rootfs := filepath.Join(final, "rootfs")
	if _, err := os.Stat(filepath.Join(rootfs, "usr", "lib", "systemd", "systemd")); err == nil {
		return rootfs, nil
	}
	unlock, err := flock(ctx, filepath.Join(imagesDir, "lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	// Someone else may have built it while we waited.
	if _, err := os.Stat(filepath.Join(rootfs, "usr", "lib", "systemd", "systemd")); err == nil {
		return rootfs, nil
	}
	// Holding the lock, any temporary build directory is a dead build's.
	if err := removeStaleBuilds(imagesDir); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(imagesDir, ".build-"+key+"-")
	if err != nil {
		return "", fmt.Errorf("image build dir: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			_ = removeTree(tmp)
		}
	}()
	start := time.Now()
	logf("testbed: building image %s in %s (debootstrap, about 90 s)", key, tmp)
	logPath := filepath.Join(imagesDir, "build-"+key+".log")
	tmpRoot := filepath.Join(tmp, "rootfs")
	if err := runLogged(ctx, logPath, "debootstrap", "--variant=minbase", "--include="+includePackages, suite, tmpRoot, mirror); err != nil {
		return "", fmt.Errorf("build image %s: %w", key, err)
	}
	if err := prepImage(ctx, tmpRoot, logPath); err != nil {
		return "", fmt.Errorf("prepare image %s: %w", key, err)
	}
	if err := os.Rename(tmp, final); err != nil {
		return "", fmt.Errorf("install image %s: %w", key, err)
	}
	ok = true
	logf("testbed: image %s built in %s", key, time.Since(start).Round(100*time.Millisecond))
	return rootfs, nil
}

// prepImage turns a fresh debootstrap tree into a test host image.
func prepImage(ctx context.Context, root, logPath string) error {
	if err := runLogged(ctx, logPath, "chroot", root, "/bin/sh", "-c", prepScript); err != nil {
		return err
	}
	for _, f := range imageFiles() {
		p := filepath.Join(root, f.Path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("write %s: %w", f.Path, err)
		}
		if err := os.WriteFile(p, []byte(f.Data), f.Mode); err != nil {
			return fmt.Errorf("write %s: %w", f.Path, err)
		}
	}
	return nil
}

// runLogged runs a command with its output appended to logPath; on failure
// the error carries the log's last lines.
func runLogged(ctx context.Context, logPath, name string, args ...string) error {
	f, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open log %s: %w", logPath, err)
	}
	defer f.Close()
	fmt.Fprintf(f, "+ %s %s\n", name, strings.Join(args, " "))
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive", "LC_ALL=C")
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w (log %s):\n%s", name, err, logPath, tail(logPath, 15))
	}
	return nil
}

// tail returns the last n lines of the file at path.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// removeStaleBuilds removes build directories left by killed builds.
func removeStaleBuilds(imagesDir string) error {
	ents, err := os.ReadDir(imagesDir)
	if err != nil {
		return fmt.Errorf("list %s: %w", imagesDir, err)
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".build-") {
			if err := removeTree(filepath.Join(imagesDir, e.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}

// removeTree removes dir after unmounting whatever is mounted below it:
// a killed debootstrap leaves /proc and /sys mounted in its target, and
// removing through those mounts must never happen.
func removeTree(dir string) error {
	mounts, err := mountsUnder(dir)
	if err != nil {
		return err
	}
	for _, m := range mounts {
		if err := exec.Command("umount", "-l", m).Run(); err != nil {
			return fmt.Errorf("unmount %s: %w", m, err)
		}
	}
	if mounts, _ := mountsUnder(dir); len(mounts) > 0 {
		return fmt.Errorf("remove %s: still mounted: %s", dir, strings.Join(mounts, ", "))
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove %s: %w", dir, err)
	}
	return nil
}

// mountsUnder lists mount points at or below dir, deepest first.
func mountsUnder(dir string) ([]string, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("read mountinfo: %w", err)
	}
	dir = filepath.Clean(dir)
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 5 {
			continue
		}
		mp := unescapeMount(f[4])
		if mp == dir || strings.HasPrefix(mp, dir+"/") {
			out = append(out, mp)
		}
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out, nil
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var c byte
			if _, err := fmt.Sscanf(s[i+1:i+4], "%03o", &c); err == nil {
				b.WriteByte(c)
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
