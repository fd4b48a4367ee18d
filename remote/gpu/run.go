package gpu

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/bringup-dev/bringup/remote/backoff"
	"github.com/bringup-dev/bringup/remote/event"
)

// Streamer starts a long-running command on the host. *sshx.Conn is one.
type Streamer interface {
	Stream(ctx context.Context, cmd string) (out io.ReadCloser, wait func() error, err error)
}

// DefaultInterval is nvidia-smi's loop period when Run is given none.
const DefaultInterval = time.Second

// ErrNoNvidiaSMI says the host has no nvidia-smi: there is nothing to
// retry, so Run returns it (wrapped with the host) instead of spinning.
var ErrNoNvidiaSMI = errors.New("nvidia-smi not found on the host")

// exitStatus is what *ssh.ExitError (and exec's ExitError) offer.
type exitStatus interface{ ExitStatus() int }

// missing reports whether err says the shell could not find nvidia-smi:
// exit status 127, or the shell's own words in the stderr the streamer
// appended.
func missing(err error) bool {
	var es exitStatus
	if errors.As(err, &es) && es.ExitStatus() == 127 {
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, "nvidia-smi: command not found") || strings.Contains(msg, "nvidia-smi: not found")
}

// quietAfter is how long the stream may be silent after a row before the
// sample being built is taken as complete. A poll's rows come in one burst.
func quietAfter(interval time.Duration) time.Duration {
	return min(interval/2, 250*time.Millisecond)
}

// Run streams host's GPU samples as KindGPU events until ctx ends (its
// error is returned), emit returns false (nil), or the host turns out to
// have no nvidia-smi (an error wrapping ErrNoNvidiaSMI, once). One
// nvidia-smi process runs with -lms interval (0 = DefaultInterval); when
// it ends or the connection is down it is started again after a backoff
// (1 s ×1.6 up to 2 min, reset by a stream that delivered a sample).
// Rows that cannot be read are skipped.
func Run(ctx context.Context, s Streamer, host string, interval time.Duration, emit func(event.Event) bool) error {
	return RunPaced(ctx, s, host, Pacing{Interval: func() time.Duration { return interval }}, emit)
}

// Pacing is a sampling interval that may change while Run runs.
type Pacing struct {
	// Interval is the interval to sample at now (0 = DefaultInterval).
	Interval func() time.Duration
	// Changed receives when Interval may have changed; nil: never.
	Changed <-chan struct{}
}

// interval is p's interval now.
func (p Pacing) interval() time.Duration {
	if iv := p.Interval(); iv > 0 {
		return iv
	}
	return DefaultInterval
}

// RunPaced is Run at an interval that may change: when Changed fires and
// Interval differs from the running stream's, nvidia-smi is started again
// at once with the new one (its -lms cannot be changed in flight).
func RunPaced(ctx context.Context, s Streamer, host string, pace Pacing, emit func(event.Event) bool) error {
	bo := backoff.New(nil)
	for {
		delivered, err := stream(ctx, s, host, pace, emit)
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, errStopped):
			return nil
		case errors.Is(err, errRepaced):
			continue
		case err != nil && missing(err):
			// Callers classify by the sentinel; the cause is its text only.
			return fmt.Errorf("%s: %w (%s)", host, ErrNoNvidiaSMI, err.Error())
		}
		if delivered {
			bo.Reset()
		}
		t := time.NewTimer(bo.Next())
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// errRepaced says the stream was ended for a new interval.
var errRepaced = errors.New("sampling interval changed")

// errStopped says emit refused an event.
var errStopped = errors.New("emit refused")

// stream runs one nvidia-smi process until it ends and reports whether it
// delivered a sample, and why it ended.
func stream(ctx context.Context, s Streamer, host string, pace Pacing, emit func(event.Event) bool) (delivered bool, err error) {
	interval := pace.interval()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	out, wait, err := s.Stream(ctx, Command(interval))
	if err != nil {
		return false, err
	}
	lines := make(chan string)
	readErr := make(chan error, 1)
	go func() {
		readErr <- readLines(ctx, out, lines)
		close(lines)
	}()
	// The reader stops once out is closed; wait for it before returning.
	defer func() {
		cancel()
		out.Close()
		for range lines {
		}
		if werr := wait(); err == nil {
			err = werr
		}
	}()

	p := NewParser()
	var zone *time.Location
	quiet := time.NewTimer(time.Hour)
	quiet.Stop()
	defer quiet.Stop()
	// devices is how many devices the last sample sent had: a sample that
	// has a row for as many is complete, and goes out without waiting for
	// the quiet (one wake-up fewer a sample; a device that appears later
	// arrives as a sample of its own, once).
	devices := 0
	send := func(smp *Sample) bool {
		if smp == nil {
			return true
		}
		devices = len(smp.GPU.Devices)
		seen := time.Now()
		if zone == nil {
			zone = hostZone(smp.Time, seen)
		}
		g := smp.GPU
		if !emit(event.Event{Host: host, Kind: event.KindGPU, Time: inZone(smp.Time, zone), Seen: seen, GPU: &g}) {
			return false
		}
		delivered = true
		return true
	}
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				if !send(p.Flush()) {
					return delivered, errStopped
				}
				return delivered, <-readErr
			}
			done, perr := p.Line(line)
			if perr != nil {
				continue
			}
			if !send(done) {
				return delivered, errStopped
			}
			if p.Complete(devices) {
				if !send(p.Flush()) {
					return delivered, errStopped
				}
				quiet.Stop()
				continue
			}
			quiet.Reset(quietAfter(interval))
		case <-quiet.C:
			if !send(p.Flush()) {
				return delivered, errStopped
			}
		case <-pace.Changed:
			if pace.interval() != interval {
				if !send(p.Flush()) {
					return delivered, errStopped
				}
				return delivered, errRepaced
			}
		}
	}
}

// readLines sends out's lines (cut at maxLine) until it ends or ctx ends.
func readLines(ctx context.Context, out io.Reader, lines chan<- string) error {
	r := bufio.NewReaderSize(out, maxLine)
	for {
		line, err := r.ReadSlice('\n')
		if len(line) > 0 {
			// A line longer than the buffer arrives in pieces; each piece
			// fails to parse and is skipped.
			select {
			case lines <- string(line):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		switch {
		case err == nil, errors.Is(err, bufio.ErrBufferFull):
		case errors.Is(err, io.EOF):
			return nil
		default:
			return err
		}
	}
}

// hostZone guesses the host's UTC offset from a timestamp printed in its
// local time (read as UTC) and when it arrived here: the difference, to
// the nearest quarter hour (every real zone offset is one). Clocks more
// than 7.5 min apart would pick a neighbouring offset.
func hostZone(printed, seen time.Time) *time.Location {
	off := printed.Sub(seen).Round(15 * time.Minute)
	if off == 0 {
		return time.UTC
	}
	return time.FixedZone("", int(off.Seconds()))
}

// inZone reads printed's wall clock in loc.
func inZone(printed time.Time, loc *time.Location) time.Time {
	y, mo, d := printed.Date()
	h, mi, s := printed.Clock()
	return time.Date(y, mo, d, h, mi, s, printed.Nanosecond(), loc)
}

// MemPerGPU is the mean memory used per device of g, in MiB: the level to
// remember at the end of a successful start's weight loading, as
// WeightProgress's reference.
func MemPerGPU(g event.GPU) int {
	if len(g.Devices) == 0 {
		return 0
	}
	sum := 0
	for _, d := range g.Devices {
		sum += d.MemUsedMiB
	}
	return sum / len(g.Devices)
}

// WeightProgress turns a sample taken while weights load into progress
// toward reference, the memory per GPU (MiB) the last successful start
// reached: done is the memory loaded so far summed over the devices, each
// counted up to reference, and total is reference times the device count.
// Both are 0 without a reference or devices. Memory is a proxy (the CUDA
// context counts, a different model would not match), so callers show it
// as an estimate.
func WeightProgress(current event.GPU, reference int) (done, total int) {
	if reference <= 0 || len(current.Devices) == 0 {
		return 0, 0
	}
	for _, d := range current.Devices {
		done += min(max(d.MemUsedMiB, 0), reference)
	}
	return done, reference * len(current.Devices)
}
