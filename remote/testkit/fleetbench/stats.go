package fleetbench

import (
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Dist is a distribution of durations, in milliseconds for the summary.
type Dist struct {
	N     int     `json:"n"`
	MinMs float64 `json:"min_ms"`
	P50ms float64 `json:"p50_ms"`
	P99ms float64 `json:"p99_ms"`
	MaxMs float64 `json:"max_ms"`
}

// distOf summarises ds (sorted in place): the nearest-rank p50 and p99.
func distOf(ds []time.Duration) Dist {
	if len(ds) == 0 {
		return Dist{}
	}
	slices.Sort(ds)
	rank := func(p float64) time.Duration {
		i := int(math.Ceil(p*float64(len(ds)))) - 1
		return ds[min(max(i, 0), len(ds)-1)]
	}
	return Dist{N: len(ds), MinMs: ms(ds[0]), P50ms: ms(rank(0.50)), P99ms: ms(rank(0.99)), MaxMs: ms(ds[len(ds)-1])}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// ratio is a/b, 0 when b is 0 (no figure to compare with).
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// median of xs (sorted in place); 0 for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// machineTicks reads /proc/stat's first line: the machine's busy and
// total time over every core, in USER_HZ ticks (busy: all but idle and
// iowait).
func machineTicks() (busy, total int64, err error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, fmt.Errorf("machine cpu: %w", err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	return parseCPULine(line)
}

// parseCPULine reads /proc/stat's "cpu" line into busy and total ticks.
func parseCPULine(line string) (busy, total int64, err error) {
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return 0, 0, fmt.Errorf("machine cpu: /proc/stat:1: %q", line)
	}
	for i, x := range f[1:] {
		n, err := strconv.ParseInt(x, 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("machine cpu: /proc/stat:1: field %d: %w", i+2, err)
		}
		total += n
		if i != 3 && i != 4 { // idle, iowait
			busy += n
		}
	}
	return busy, total, nil
}

// busyPct is the share of the machine's cores busy between two
// machineTicks readings, in percent.
func busyPct(busy0, total0, busy1, total1 int64) float64 {
	return 100 * ratio(float64(busy1-busy0), float64(total1-total0))
}

// cpuTime is the CPU this process has used, user and system.
func cpuTime() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("getrusage: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

// userHZ is the unit of /proc/PID/stat's times: USER_HZ, 100 on every
// Linux architecture the kernel exports it for.
const userHZ = 100

// procCPU is the CPU process pid has used (user and system), from
// /proc/PID/stat.
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("cpu of %d: %w", pid, err)
	}
	return parseStatCPU(string(b))
}

// parseStatCPU reads utime and stime (fields 14 and 15) from a
// /proc/PID/stat line. The command name (field 2) is in parentheses and
// may hold spaces and parentheses itself: fields are counted after its
// last ')'.
func parseStatCPU(stat string) (time.Duration, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, errors.New("stat: no command name")
	}
	f := strings.Fields(stat[i+1:]) // f[0] is field 3 (state)
	if len(f) < 13 {
		return 0, fmt.Errorf("stat: %d fields after the name, want at least 13", len(f))
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("stat: %q: %w", s, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / userHZ, nil
}

// procRSS is process pid's resident set ("self" for this one), from
// /proc/PID/status.
func procRSS(pid string) (int64, error) {
	b, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return 0, fmt.Errorf("rss of %s: %w", pid, err)
	}
	return parseStatusRSS(string(b))
}

// parseStatusRSS reads VmRSS (kB) from /proc/PID/status, in bytes.
func parseStatusRSS(status string) (int64, error) {
	for _, line := range strings.Split(status, "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(v)
			if len(f) != 2 || f[1] != "kB" {
				return 0, fmt.Errorf("status: VmRSS %q", strings.TrimSpace(v))
			}
			n, err := strconv.ParseInt(f[0], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("status: VmRSS: %w", err)
			}
			return n << 10, nil
		}
	}
	return 0, errors.New("status: no VmRSS")
}

// loadAvg is the machine's 1-minute load average, for the summary: the
// figures mean little without it on a shared machine.
func loadAvg() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}
