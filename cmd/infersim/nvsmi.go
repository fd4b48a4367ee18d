package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/bringup-dev/bringup/remote/sim/sglang"
)

// The driver the stand-in reports (fixtures/gpu/nvidia-smi.txt).
const driverVersion = "580.159.04"

// smiField is one --query-gpu field: its header (with units) and how to
// render a device's value with and without units.
type smiField struct {
	header string
	value  func(d smiDevice, nounits bool) string
}

// smiDevice is one GPU as the stand-in reports it.
type smiDevice struct {
	index int
	r     sglang.Reading
	now   time.Time
}

func (d smiDevice) uuid() string {
	return fmt.Sprintf("GPU-3f1c2a9e-5b7d-4c1e-9a2b-6d8e0f4a7c%02x", 0x21+d.index)
}

// unit appends " unit" unless nounits.
func unit(v, u string, nounits bool) string {
	if nounits {
		return v
	}
	return v + " " + u
}

// smiFields are the supported query fields, by every name nvidia-smi accepts.
func smiFields() map[string]smiField {
	mem := smiField{"memory.used [MiB]", func(d smiDevice, nu bool) string { return unit(strconv.Itoa(d.r.MemUsedMiB), "MiB", nu) }}
	total := smiField{"memory.total [MiB]", func(d smiDevice, nu bool) string { return unit(strconv.Itoa(sglang.GPUTotalMiB), "MiB", nu) }}
	util := smiField{"utilization.gpu [%]", func(d smiDevice, nu bool) string { return unit(strconv.Itoa(d.r.UtilPct), "%", nu) }}
	power := smiField{"power.draw [W]", func(d smiDevice, nu bool) string { return unit(fmt.Sprintf("%.2f", d.r.PowerW), "W", nu) }}
	limit := smiField{"power.limit [W]", func(d smiDevice, nu bool) string { return unit(fmt.Sprintf("%.2f", sglang.GPUPowerCapW), "W", nu) }}
	clock := smiField{"clocks.current.sm [MHz]", func(d smiDevice, nu bool) string { return unit(strconv.Itoa(d.r.SMClockMHz), "MHz", nu) }}
	name := smiField{"name", func(smiDevice, bool) string { return sglang.GPUName }}
	uuid := smiField{"uuid", func(d smiDevice, _ bool) string { return d.uuid() }}
	return map[string]smiField{
		"timestamp":         {"timestamp", func(d smiDevice, _ bool) string { return d.now.Format("2006/01/02 15:04:05.000") }},
		"index":             {"index", func(d smiDevice, _ bool) string { return strconv.Itoa(d.index) }},
		"name":              name,
		"gpu_name":          name,
		"uuid":              uuid,
		"gpu_uuid":          uuid,
		"memory.used":       mem,
		"memory.total":      total,
		"utilization.gpu":   util,
		"temperature.gpu":   {"temperature.gpu", func(d smiDevice, _ bool) string { return strconv.Itoa(d.r.TempC) }},
		"power.draw":        power,
		"power.limit":       limit,
		"clocks.current.sm": clock,
		"clocks.sm":         clock,
	}
}

// nvidiaSMI is the nvidia-smi stand-in. It supports --query-gpu with
// --format=csv[,noheader][,nounits], -l/-lms loops, -L, and the plain
// table; its GPUs follow the state file of a running infersim.
func nvidiaSMI(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	var query, format string
	var loop time.Duration
	list := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		key, val, hasVal := strings.Cut(a, "=")
		next := func() (string, bool) {
			if hasVal {
				return val, true
			}
			if i+1 < len(args) {
				i++
				return args[i], true
			}
			return "", false
		}
		var ok bool
		switch key {
		case "--query-gpu":
			query, ok = next()
		case "--format":
			format, ok = next()
		case "-lms", "--loop-ms", "-l", "--loop":
			var v string
			if v, ok = next(); ok {
				n, err := strconv.Atoi(v)
				if err != nil || n <= 0 {
					ok = false
					break
				}
				loop = time.Duration(n) * time.Millisecond
				if key == "-l" || key == "--loop" {
					loop = time.Duration(n) * time.Second
				}
			}
		case "-L", "--list-gpus":
			list, ok = true, true
		}
		if !ok {
			fmt.Fprintf(stderr, "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.\n")
			return 2
		}
	}
	dir := envOr(getenv, "INFERSIM_STATE_DIR", "/run/infersim")
	switch {
	case list:
		for _, d := range readDevices(dir) {
			fmt.Fprintf(stdout, "GPU %d: %s (UUID: %s)\n", d.index, sglang.GPUName, d.uuid())
		}
		return 0
	case query != "":
		return queryGPU(query, format, loop, dir, stdout, stderr)
	}
	writeTable(stdout, readDevices(dir))
	return 0
}

// queryGPU prints the CSV of --query-gpu once, or every loop until the
// process is killed (nvidia-smi prints the header once).
func queryGPU(query, format string, loop time.Duration, dir string, stdout, stderr io.Writer) int {
	if !strings.HasPrefix(format, "csv") {
		fmt.Fprintf(stderr, "'%s' is not a valid format.\n", format)
		return 2
	}
	opts := strings.Split(format, ",")[1:]
	noheader, nounits := false, false
	for _, o := range opts {
		switch strings.TrimSpace(o) {
		case "noheader":
			noheader = true
		case "nounits":
			nounits = true
		default:
			fmt.Fprintf(stderr, "'%s' is not a valid format.\n", format)
			return 2
		}
	}
	all := smiFields()
	var fields []smiField
	for _, name := range strings.Split(query, ",") {
		f, ok := all[strings.TrimSpace(name)]
		if !ok {
			fmt.Fprintf(stderr, "Field \"%s\" is not a valid field to query.\n\n", strings.TrimSpace(name))
			return 2
		}
		fields = append(fields, f)
	}
	if !noheader {
		hs := make([]string, len(fields))
		for i, f := range fields {
			hs[i] = f.header
		}
		fmt.Fprintln(stdout, strings.Join(hs, ", "))
	}
	for {
		var b strings.Builder
		for _, d := range readDevices(dir) {
			vs := make([]string, len(fields))
			for i, f := range fields {
				vs[i] = f.value(d, nounits)
			}
			b.WriteString(strings.Join(vs, ", ") + "\n")
		}
		if _, err := io.WriteString(stdout, b.String()); err != nil || loop == 0 {
			// A closed pipe ends the loop, as SIGPIPE ends nvidia-smi.
			return 0
		}
		time.Sleep(loop)
	}
}

// readDevices returns the eight GPUs: from a live infersim's state file,
// or idle when there is none (or its writer is gone).
func readDevices(dir string) []smiDevice {
	now := time.Now()
	out := make([]smiDevice, 8)
	for i := range out {
		out[i] = smiDevice{index: i, r: sglang.Idle(i), now: now}
	}
	b, err := os.ReadFile(filepath.Join(dir, "gpu.json"))
	if err != nil {
		return out
	}
	var st stateFile
	if json.Unmarshal(b, &st) != nil || !alive(st.PID) {
		return out
	}
	for i := range out {
		if i < len(st.Devices) {
			out[i].r = st.Devices[i]
		}
	}
	return out
}

// alive reports whether a process with pid exists.
func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// writeTable prints the plain nvidia-smi table (fixtures/gpu/nvidia-smi.txt)
// for every device.
func writeTable(w io.Writer, devs []smiDevice) {
	now := time.Now()
	fmt.Fprintf(w, "%s       \n", now.Format("Mon Jan _2 15:04:05 2006"))
	sep := "+-----------------------------------------+------------------------+----------------------+"
	fmt.Fprintln(w, "+-----------------------------------------------------------------------------------------+")
	fmt.Fprintf(w, "| NVIDIA-SMI %-22s Driver Version: %-14s CUDA Version: 13.0     |\n", driverVersion, driverVersion)
	fmt.Fprintln(w, sep)
	fmt.Fprintln(w, "| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |")
	fmt.Fprintln(w, "| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |")
	fmt.Fprintln(w, "|                                         |                        |               MIG M. |")
	fmt.Fprintln(w, "|=========================================+========================+======================|")
	busy := false
	for _, d := range devs {
		fmt.Fprintf(w, "| %3d  %-31sOn  |   00000000:00:%02X.0 Off |                    0 |\n", d.index, sglang.GPUName, 0x06+d.index)
		mem := fmt.Sprintf("%dMiB / %dMiB", d.r.MemUsedMiB, sglang.GPUTotalMiB)
		pwr := fmt.Sprintf("%.0fW", d.r.PowerW)
		fmt.Fprintf(w, "| N/A   %2dC    P0%16s /  %3.0fW | %22s | %6d%%      Default |\n", d.r.TempC, pwr, sglang.GPUPowerCapW, mem, d.r.UtilPct)
		fmt.Fprintln(w, "|                                         |                        |             Disabled |")
		fmt.Fprintln(w, sep)
		busy = busy || d.r.MemUsedMiB > 0
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "+-----------------------------------------------------------------------------------------+")
	fmt.Fprintln(w, "| Processes:                                                                              |")
	fmt.Fprintln(w, "|  GPU   GI   CI              PID   Type   Process name                        GPU Memory |")
	fmt.Fprintln(w, "|        ID   ID                                                               Usage      |")
	fmt.Fprintln(w, "|=========================================================================================|")
	if !busy {
		fmt.Fprintln(w, "|  No running processes found                                                             |")
	}
	for _, d := range devs {
		if d.r.MemUsedMiB > 0 {
			fmt.Fprintf(w, "|  %3d   N/A  N/A  %15s      C   %-32s %9dMiB |\n", d.index, "-", "python3", d.r.MemUsedMiB)
		}
	}
	fmt.Fprintln(w, "+-----------------------------------------------------------------------------------------+")
}
