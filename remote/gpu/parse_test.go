package gpu

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/remote/event"
)

func mustOpen(t *testing.T, name string) *os.File {
	t.Helper()
	f, err := os.Open("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func TestParseFixtures(t *testing.T) {
	h200 := func(i, used, util int, power float64) event.GPUDevice {
		return event.GPUDevice{Index: i, Name: "NVIDIA H200", MemUsedMiB: used, MemTotalMiB: 143771, UtilPct: util, PowerW: power}
	}
	tests := []struct {
		file    string
		samples int
		devices int
		check   map[int][]event.GPUDevice // sample number → its devices
		first   string                    // the first sample's timestamp
	}{
		{
			// The real stream: header, units, extra columns, one GPU.
			file: "nvsmi-stream.csv", samples: 28, devices: 1, first: "2026/11/30 00:38:36.829",
			check: map[int][]event.GPUDevice{
				0:  {h200(0, 0, 0, 122.98)},
				11: {h200(0, 4715, 3, 88.68)},
				15: {h200(0, 17003, 0, 121.56)},
				27: {h200(0, 0, 0, 127.28)},
			},
		},
		{
			// Run's own query from the stand-in: no header, no units, 8 GPUs.
			file: "stream-8gpu.csv", samples: 2, devices: 8, first: "2026/11/30 01:53:45.041",
			check: map[int][]event.GPUDevice{1: {h200(0, 0, 0, 79), h200(1, 0, 0, 80), h200(2, 0, 0, 81), h200(3, 0, 0, 79),
				h200(4, 0, 0, 80), h200(5, 0, 0, 81), h200(6, 0, 0, 79), h200(7, 0, 0, 80)}},
		},
		{
			file: "na-values.csv", samples: 2, devices: 2, first: "2026/11/30 00:38:36.829",
			check: map[int][]event.GPUDevice{
				0: {{Index: 0, Name: "NVIDIA H200", MemTotalMiB: 143771}, {Index: 1, Name: "NVIDIA A10G", MemTotalMiB: 23028}},
				1: {h200(0, 4715, 3, 88.68), {Index: 1, Name: "NVIDIA A10G", MemUsedMiB: 1024, MemTotalMiB: 23028, PowerW: 55.10}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			got, err := ParseCSV(mustOpen(t, tt.file))
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != tt.samples {
				t.Fatalf("%d samples, want %d", len(got), tt.samples)
			}
			for i, s := range got {
				if len(s.GPU.Devices) != tt.devices {
					t.Errorf("sample %d: %d devices, want %d", i, len(s.GPU.Devices), tt.devices)
				}
				if i > 0 && !s.Time.After(got[i-1].Time) {
					t.Errorf("sample %d at %v, not after %v", i, s.Time, got[i-1].Time)
				}
			}
			if f := got[0].Time.Format(TimeLayout); f != tt.first {
				t.Errorf("first sample at %s, want %s", f, tt.first)
			}
			for i, want := range tt.check {
				devs := got[i].GPU.Devices
				if len(devs) != len(want) {
					t.Errorf("sample %d: %+v, want %+v", i, devs, want)
					continue
				}
				for j := range want {
					if devs[j] != want[j] {
						t.Errorf("sample %d device %d: %+v, want %+v", i, j, devs[j], want[j])
					}
				}
			}
		})
	}
}

func TestParseGrouping(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []int // devices per sample
	}{
		{"one timestamp", "2026/11/30 00:00:00.000, 0, g, 1, 2, 3, 4\n2026/11/30 00:00:00.000, 1, g, 1, 2, 3, 4\n", []int{2}},
		{"new timestamp", "2026/11/30 00:00:00.000, 0, g, 1, 2, 3, 4\n2026/11/30 00:00:01.000, 0, g, 1, 2, 3, 4\n", []int{1, 1}},
		{"index repeats within a timestamp", "2026/11/30 00:00:00.000, 0, g, 1, 2, 3, 4\n2026/11/30 00:00:00.000, 0, g, 1, 2, 3, 4\n", []int{1, 1}},
		{"blank lines and CRLF", "\r\n2026/11/30 00:00:00.000, 0, g, 1, 2, 3, 4\r\n\n2026/11/30 00:00:00.000, 1, g, 1, 2, 3, 4\r\n", []int{2}},
		{"header sets columns", "index, memory.used [MiB], clocks.sm [MHz]\n0, 5 MiB, 300 MHz\n1, 6 MiB, 300 MHz\n", []int{2}},
		{"no input", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseCSV(strings.NewReader(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			var n []int
			for _, s := range got {
				n = append(n, len(s.GPU.Devices))
			}
			if !equalInts(n, tt.want) {
				t.Errorf("devices per sample %v, want %v", n, tt.want)
			}
		})
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestParseErrors(t *testing.T) {
	const ok = "2026/11/30 00:00:00.000, 0, g, 1, 2, 3, 4\n"
	tests := []struct {
		name, in, want string
	}{
		{"too few fields", ok + "2026/11/30 00:00:00.000, 1, g, 1\n", `line 2: 4 fields, want 7`},
		{"bad index", "2026/11/30 00:00:00.000, x, g, 1, 2, 3, 4\n", `line 1: index "x": invalid syntax`},
		{"negative index", "2026/11/30 00:00:00.000, -1, g, 1, 2, 3, 4\n", `line 1: index "-1": negative`},
		{"bad timestamp", "Mon Nov 30, 0, g, 1, 2, 3, 4\n", `line 1: timestamp "Mon Nov 30": parsing time`},
		{"bad memory", "2026/11/30 00:00:00.000, 0, g, 1 GiB, 2, 3, 4\n", `line 1: memory.used "1 GiB": invalid syntax`},
		{"negative memory", "2026/11/30 00:00:00.000, 0, g, -5, 2, 3, 4\n", `line 1: memory.used "-5": negative`},
		{"power NaN", "2026/11/30 00:00:00.000, 0, g, 1, 2, 3, NaN\n", `line 1: power.draw "NaN": out of range`},
		{"no index column", "timestamp, memory.used\n2026/11/30 00:00:00.000, 1\n", `line 2: no index column`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseCSV(strings.NewReader(tt.in))
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("error %v, want one starting %q", err, tt.want)
			}
		})
	}
}

func TestParserLineKeepsSampleOnError(t *testing.T) {
	p := NewParser()
	if _, err := p.Line("2026/11/30 00:00:00.000, 0, g, 1, 2, 3, 4"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Line("garbage"); err == nil {
		t.Fatal("garbage parsed")
	}
	if done, err := p.Line("2026/11/30 00:00:00.000, 1, g, 1, 2, 3, 4"); err != nil || done != nil {
		t.Fatalf("second device: %v, %v", done, err)
	}
	if s := p.Flush(); s == nil || len(s.GPU.Devices) != 2 {
		t.Fatalf("flush: %+v, want both devices", s)
	}
	if s := p.Flush(); s != nil {
		t.Errorf("second flush: %+v, want nothing", s)
	}
}

func TestCommand(t *testing.T) {
	want := "nvidia-smi --query-gpu=timestamp,index,name,memory.used,memory.total,utilization.gpu,power.draw --format=csv,noheader,nounits -lms 1000"
	if got := Command(time.Second); got != want {
		t.Errorf("Command = %q, want %q", got, want)
	}
	if got := Command(0); !strings.HasSuffix(got, "-lms 1") {
		t.Errorf("Command(0) = %q, want a 1 ms floor", got)
	}
}

func TestWeightProgress(t *testing.T) {
	g := func(used ...int) event.GPU {
		var out event.GPU
		for i, u := range used {
			out.Devices = append(out.Devices, event.GPUDevice{Index: i, MemUsedMiB: u})
		}
		return out
	}
	tests := []struct {
		name        string
		cur         event.GPU
		ref         int
		done, total int
	}{
		{"idle", g(0, 0), 1000, 0, 2000},
		{"halfway", g(500, 500), 1000, 1000, 2000},
		{"uneven, one over the reference", g(200, 1500), 1000, 1200, 2000},
		{"no reference yet", g(500), 0, 0, 0},
		{"no devices", g(), 1000, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			done, total := WeightProgress(tt.cur, tt.ref)
			if done != tt.done || total != tt.total {
				t.Errorf("WeightProgress = %d/%d, want %d/%d", done, total, tt.done, tt.total)
			}
		})
	}
	if m := MemPerGPU(g(100, 300)); m != 200 {
		t.Errorf("MemPerGPU = %d, want 200", m)
	}
	if m := MemPerGPU(g()); m != 0 {
		t.Errorf("MemPerGPU of nothing = %d, want 0", m)
	}
}

func FuzzParse(f *testing.F) {
	for _, name := range []string{"nvsmi-stream.csv", "stream-8gpu.csv", "na-values.csv"} {
		b, err := os.ReadFile("testdata/" + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	f.Add("index, memory.used [MiB]\n0, 5 MiB\n0, [N/A]\n")
	f.Fuzz(func(t *testing.T, in string) {
		got, err := ParseCSV(strings.NewReader(in))
		if err != nil && !strings.HasPrefix(err.Error(), "line ") && !strings.HasPrefix(err.Error(), "read ") {
			t.Errorf("error without a line: %v", err)
		}
		for i, s := range got {
			if len(s.GPU.Devices) == 0 {
				t.Fatalf("sample %d has no devices", i)
			}
			seen := map[int]bool{}
			for _, d := range s.GPU.Devices {
				if seen[d.Index] {
					t.Fatalf("sample %d lists device %d twice", i, d.Index)
				}
				seen[d.Index] = true
				if d.Index < 0 || d.MemUsedMiB < 0 || d.MemTotalMiB < 0 || d.UtilPct < 0 || d.PowerW < 0 || d.PowerW != d.PowerW {
					t.Fatalf("sample %d: impossible reading %+v", i, d)
				}
			}
		}
	})
}

// TestParserComplete: a sample is complete once it has a row for as many
// devices as the poll before; with no count known, never.
func TestParserComplete(t *testing.T) {
	p := NewParser()
	row := func(dev int) string {
		return fmt.Sprintf("2026/12/03 08:00:00.000, %d, NVIDIA H200, 1000, 143771, 0, 79.00\n", dev)
	}
	if p.Complete(2) {
		t.Error("complete with no row")
	}
	if _, err := p.Line(row(0)); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		devices int
		want    bool
	}{{0, false}, {1, true}, {2, false}} {
		if got := p.Complete(tc.devices); got != tc.want {
			t.Errorf("one row, Complete(%d) = %v, want %v", tc.devices, got, tc.want)
		}
	}
	if _, err := p.Line(row(1)); err != nil {
		t.Fatal(err)
	}
	if !p.Complete(2) {
		t.Error("two rows, Complete(2) = false")
	}
	if s := p.Flush(); s == nil || len(s.GPU.Devices) != 2 || p.Complete(2) {
		t.Errorf("Flush = %+v, then Complete(2) = %v: want the 2-device sample, then nothing pending", s, p.Complete(2))
	}
}
