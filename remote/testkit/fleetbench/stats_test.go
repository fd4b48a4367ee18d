package fleetbench

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestDistOf(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- { // 1..100 ms, unsorted
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	got := distOf(ds)
	want := Dist{N: 100, MinMs: 1, P50ms: 50, P99ms: 99, MaxMs: 100}
	if got != want {
		t.Errorf("distOf(1..100 ms) = %+v, want %+v", got, want)
	}
	if got := distOf([]time.Duration{7 * time.Millisecond}); got != (Dist{N: 1, MinMs: 7, P50ms: 7, P99ms: 7, MaxMs: 7}) {
		t.Errorf("one sample: %+v", got)
	}
	if got := distOf(nil); got != (Dist{}) {
		t.Errorf("no samples: %+v", got)
	}
}

func TestMedianAndRatio(t *testing.T) {
	if m := median([]float64{3, 1, 2}); m != 2 {
		t.Errorf("median(3,1,2) = %v", m)
	}
	if m := median([]float64{4, 1, 2, 3}); m != 2.5 {
		t.Errorf("median(4,1,2,3) = %v", m)
	}
	if r := ratio(1, 0); r != 0 {
		t.Errorf("ratio over 0 = %v, want 0 (no figure)", r)
	}
}

// TestParseProc reads lines as Linux 6 printed them on the development
// machine (/proc/self/stat of cat; VmRSS of /proc/self/status), and a
// command name with spaces and a parenthesis, which stat does not escape.
func TestParseProc(t *testing.T) {
	stat := "12673 (cat) R 12671 12671 11709 0 -1 4194304 96 0 0 0 0 0 0 0 20 0 1 0 94420 3133440 359 18446744073709551615 94746270244864 94746270264745 140726060723200 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 94746270280752 94746270282368 94746565394432 140726060731075 140726060731095 140726060731095 140726060732395 0\n"
	if d, err := parseStatCPU(stat); err != nil || d != 0 {
		t.Errorf("cat's stat: %v, %v; want 0", d, err)
	}
	odd := "7 (a b) c)) S 1 7 7 0 -1 0 0 0 0 0 250 50 0 0 20 0 1 0 5 0 0\n"
	if d, err := parseStatCPU(odd); err != nil || d != 3*time.Second {
		t.Errorf("utime 250 + stime 50 ticks: %v, %v; want 3 s", d, err)
	}
	if _, err := parseStatCPU("7 (short) S 1"); err == nil {
		t.Error("a short stat line parsed")
	}
	if n, err := parseStatusRSS("Name:\tcat\nVmRSS:\t    2204 kB\nThreads:\t1\n"); err != nil || n != 2204<<10 {
		t.Errorf("VmRSS 2204 kB: %d, %v", n, err)
	}
	if _, err := parseStatusRSS("Name:\tkthreadd\n"); err == nil {
		t.Error("no VmRSS (a kernel thread) parsed")
	}
	// And this process, through the files themselves.
	if _, err := procCPU(os.Getpid()); err != nil {
		t.Error(err)
	}
	if n, err := procRSS(strconv.Itoa(os.Getpid())); err != nil || n <= 0 {
		t.Errorf("own RSS %d, %v", n, err)
	}
}

func TestParseCPULine(t *testing.T) {
	// /proc/stat's first line on the development VM (Linux 6.18).
	busy, total, err := parseCPULine("cpu  621096 39995 219702 1462092 3986 0 5839 358 0 0")
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(621096 + 39995 + 219702 + 5839 + 358); busy != want {
		t.Errorf("busy %d, want %d (all but idle and iowait)", busy, want)
	}
	if want := int64(621096 + 39995 + 219702 + 1462092 + 3986 + 5839 + 358); total != want {
		t.Errorf("total %d, want %d", total, want)
	}
	if got := busyPct(100, 1000, 400, 1400); got != 75 {
		t.Errorf("busyPct = %v, want 75", got)
	}
	for _, bad := range []string{"", "intr 1 2 3 4 5", "cpu 1 2 x 4"} {
		if _, _, err := parseCPULine(bad); err == nil || !strings.Contains(err.Error(), "/proc/stat:1") {
			t.Errorf("parseCPULine(%q) = %v, want an error naming /proc/stat:1", bad, err)
		}
	}
}
