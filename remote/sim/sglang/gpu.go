package sglang

import "time"

// The GPU the scripts run on, as nvidia-smi reports it.
const (
	GPUName      = "NVIDIA H200"
	GPUTotalMiB  = 143771
	GPUPowerCapW = 700.0
)

// Reading is one device's state at a moment of the script.
type Reading struct {
	MemUsedMiB int
	UtilPct    int
	PowerW     float64
	TempC      int
	SMClockMHz int
}

// Idle is an idle H200 (fixtures/gpu/nvsmi-stream.csv before the load).
func Idle(dev int) Reading {
	return Reading{PowerW: 79.0 + float64(dev%3), TempC: 34 + dev%2, SMClockMHz: 345}
}

// GPU returns device dev's reading at offset at of the script: memory
// climbs with every loaded shard toward the weights' size, jumps when the
// KV pool is allocated, creeps up during capture, and falls to zero when
// the process exits. Devices differ by a few MiB so the eight lines of a
// sample are not identical.
func (s *Script) GPU(at time.Duration, dev int) Reading {
	m := s.Marks
	if at < m.InitBegin || m.InitBegin == Never || (s.Exit != Never && at >= s.Exit) {
		return Idle(dev)
	}
	r := Reading{TempC: 36 + dev%3, SMClockMHz: 1980, PowerW: 121.5 + float64(dev%4)/10, UtilPct: 0}
	used := totalGiB - availAtLoad // the CUDA context after init
	if m.InitEnd == Never || at < m.InitEnd {
		used /= 2
	}
	if m.WeightsBegin != Never && at >= m.WeightsBegin {
		loaded := 0
		for _, t := range s.shardAt {
			if m.WeightsBegin+t <= at {
				loaded++
			}
		}
		if len(s.shardAt) > 0 {
			used += s.weightsGiB * float64(loaded) / float64(len(s.shardAt))
		}
		r.UtilPct = 3 + dev%3
	}
	if m.KVAllocated != Never && at >= m.KVAllocated {
		used = totalGiB - availAfterPool
		r.UtilPct = 0
	}
	if m.CaptureBegin != Never && at >= m.CaptureBegin {
		frac := 1.0
		if m.CaptureEnd == Never || at < m.CaptureEnd {
			frac = 0
			if m.CaptureEnd != Never {
				frac = float64(at-m.CaptureBegin) / float64(m.CaptureEnd-m.CaptureBegin)
			}
			r.UtilPct = 45 + dev%7
			r.PowerW = 310 + float64(dev)
			r.TempC = 48 + dev%3
		}
		used = totalGiB - availAtCapture + (availAtCapture-availAfterGraph)*frac
	}
	if m.Ready != Never && at >= m.Ready {
		r.PowerW = 132.4 + float64(dev%4)/10
	}
	r.MemUsedMiB = int(used*1024) + dev*2
	return r
}
