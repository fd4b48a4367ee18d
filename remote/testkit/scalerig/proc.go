package scalerig

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTick is the kernel's USER_HZ, the unit of /proc/PID/stat's times.
const clockTick = 100

// ProcCPU is process pid's CPU time so far (user and system), from
// /proc/PID/stat; pid 0 is this process.
func ProcCPU(pid int) (time.Duration, error) {
	p := "self"
	if pid != 0 {
		p = strconv.Itoa(pid)
	}
	b, err := os.ReadFile("/proc/" + p + "/stat")
	if err != nil {
		return 0, fmt.Errorf("cpu of %s: %w", p, err)
	}
	// The fields after the command (which may hold spaces) in ")".
	rest := string(b[strings.LastIndexByte(string(b), ')')+2:])
	f := strings.Fields(rest)
	if len(f) < 13 {
		return 0, fmt.Errorf("cpu of %s: short stat", p)
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("cpu of %s: bad stat", p)
	}
	return time.Duration(ut+st) * time.Second / clockTick, nil
}

// ProcRSSMiB is process pid's resident memory (VmRSS) in MiB; pid 0 is
// this process.
func ProcRSSMiB(pid int) (float64, error) {
	p := "self"
	if pid != 0 {
		p = strconv.Itoa(pid)
	}
	b, err := os.ReadFile("/proc/" + p + "/status")
	if err != nil {
		return 0, fmt.Errorf("rss of %s: %w", p, err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			if err != nil {
				return 0, fmt.Errorf("rss of %s: %w", p, err)
			}
			return kb / 1024, nil
		}
	}
	return 0, fmt.Errorf("rss of %s: no VmRSS", p)
}

// LoadAvg is the machine's 1-minute load average.
func LoadAvg() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return -1
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}
