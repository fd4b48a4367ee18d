package testbed

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// proc names one process so that a recycled process id is never mistaken
// for it: the id plus the start time the kernel gives it (clock ticks since
// boot, field 22 of /proc/PID/stat).
type proc struct {
	PID   int    `json:"pid"`
	Start uint64 `json:"start"`
}

// procStat reads the state letter and start time of pid.
func procStat(pid int) (state byte, start uint64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, err
	}
	// The command name (field 2) may hold spaces and parentheses: the
	// fields after it start past the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, 0, fmt.Errorf("parse /proc/%d/stat: no ')'", pid)
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state); field 22 (starttime) is f[19].
	if len(f) < 20 {
		return 0, 0, fmt.Errorf("parse /proc/%d/stat: %d fields", pid, len(f))
	}
	start, err = strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("parse /proc/%d/stat start time: %w", pid, err)
	}
	return f[0][0], start, nil
}

// procOf names the running process pid.
func procOf(pid int) (proc, error) {
	_, start, err := procStat(pid)
	if err != nil {
		return proc{}, fmt.Errorf("read process %d: %w", pid, err)
	}
	return proc{PID: pid, Start: start}, nil
}

// alive reports whether p still runs. A zombie counts as gone: it runs no
// code, and a process that is not our child is reaped by someone else.
func (p proc) alive() bool {
	if p.PID <= 0 {
		return false
	}
	state, start, err := procStat(p.PID)
	return err == nil && start == p.Start && state != 'Z'
}

// signal sends sig to p if it is still the same process.
func (p proc) signal(sig syscall.Signal) error {
	if !p.alive() {
		return nil
	}
	if err := syscall.Kill(p.PID, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signal %v to process %d: %w", sig, p.PID, err)
	}
	return nil
}

// waitGone polls until p has ended or ctx is done.
func (p proc) waitGone(ctx context.Context) error {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for p.alive() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("process %d still running: %w", p.PID, ctx.Err())
		case <-t.C:
		}
	}
	return nil
}

// pids lists the ids of all processes.
func pids() ([]int, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	var out []int
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, pid)
		}
	}
	return out, nil
}

// childOf finds the first child of parent: the container's init is the one
// child systemd-nspawn keeps.
func childOf(parent int) (proc, error) {
	all, err := pids()
	if err != nil {
		return proc{}, err
	}
	for _, pid := range all {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) > 1 && f[1] == strconv.Itoa(parent) {
			return procOf(pid)
		}
	}
	return proc{}, fmt.Errorf("process %d has no child", parent)
}

// netnsID is the identity of a network namespace as /proc shows it
// ("net:[4026532275]").
func netnsIDOfFile(path string) (string, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return "", fmt.Errorf("stat %s: %w", path, err)
	}
	return fmt.Sprintf("net:[%d]", st.Ino), nil
}

// procInfo is what the leak check needs to know of a process.
type procInfo struct {
	proc
	Comm  string
	Args  []string
	NetNS string
}

// listProcs reads every running process's name, command line and network
// namespace. Processes that end meanwhile are skipped, and so are zombies:
// they hold nothing but their id, and a detached nspawn whose parent
// exited stays one until the machine's PID 1 reaps it, which some sandbox
// inits never do.
func listProcs() ([]procInfo, error) {
	all, err := pids()
	if err != nil {
		return nil, err
	}
	var out []procInfo
	for _, pid := range all {
		state, start, err := procStat(pid)
		if err != nil || state == 'Z' {
			continue
		}
		p := proc{PID: pid, Start: start}
		comm, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "comm"))
		cmdline, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
		ns, _ := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "ns", "net"))
		out = append(out, procInfo{
			proc:  p,
			Comm:  strings.TrimSpace(string(comm)),
			Args:  strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00"),
			NetNS: ns,
		})
	}
	return out, nil
}

// flock takes an exclusive lock on path (created if missing) and returns
// the function that releases it. The lock is the kernel's, so a killed
// holder releases it by dying.
func flock(ctx context.Context, path string) (func(), error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}
