package fleetbench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bringup-dev/bringup/remote/journal"
)

// The raw side of every comparison is what a person would type: OpenSSH's
// ssh with the inventory's ssh_config, running journalctl with the same
// --output-fields bringup asks for. Its stdout is read here as bytes; only
// the two fields that time a line are decoded, after its arrival is noted.

// rawArgs is the ssh command line that runs remote on host.
func rawArgs(sshConfig, host, remote string) []string {
	return []string{"-F", sshConfig, "-T", "-o", "BatchMode=yes", host, remote}
}

// followCmd is the raw follower's journalctl: lines from since on, as
// JSON with bringup's fields. Starting at a time rather than at the end
// (-n 0), it misses no line written before journalctl has attached, which
// on a loaded machine can take more than a second. It prints "ready"
// first, once the session runs.
func followCmd(unit string, since time.Time) string {
	return "echo ready; exec journalctl -q -u " + unit + " -f -o json --all --no-pager --since=@" + strconv.FormatInt(since.Unix(), 10) +
		" --output-fields=" + journal.OutputFields
}

// dumpCmd reads a unit's whole journal once, as JSON with bringup's
// fields: the raw catch-up.
func dumpCmd(unit string) string {
	return "exec journalctl -q -u " + unit + " -o json --all --no-pager --output-fields=" + journal.OutputFields
}

// exportCmd is dumpCmd in journalctl's export format: the pipe bringup's
// journal follower reads, as the catch-up's control.
func exportCmd(unit string) string {
	return "exec journalctl -q -u " + unit + " -o export --no-pager --output-fields=" + journal.OutputFields
}

// rawLine is one line as the raw follower saw it.
type rawLine struct {
	ts      time.Time // the journal's __REALTIME_TIMESTAMP
	arrived time.Time // when its last byte was read here
}

// rawFollower follows one host's unit journal through ssh and times each
// line's arrival, keyed by cursor.
type rawFollower struct {
	host string
	cmd  *exec.Cmd
	done chan struct{} // closed when the reader has finished
	err  error         // the reader's, set before done closes

	mu    sync.Mutex
	lines map[string]rawLine
	bad   int // lines that did not decode
}

// startRawFollower starts the follower and returns once its journalctl
// runs (or fails to).
func startRawFollower(ctx context.Context, sshConfig, host, unit string, since time.Time) (*rawFollower, error) {
	cmd := exec.CommandContext(ctx, "ssh", rawArgs(sshConfig, host, followCmd(unit, since))...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("raw follower %s: %w", host, err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("raw follower %s: %w", host, err)
	}
	r := &rawFollower{host: host, cmd: cmd, done: make(chan struct{}), lines: map[string]rawLine{}}
	br := bufio.NewReaderSize(out, 1<<16)
	first, err := br.ReadString('\n')
	if err == nil && first != "ready\n" {
		err = fmt.Errorf("got %q", first)
	}
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("raw follower %s: no ready line: %w: %s", host, err, strings.TrimSpace(stderr.String()))
	}
	go func() {
		defer close(r.done)
		r.err = r.read(br)
		_ = cmd.Wait() // killed by ctx; its exit status says nothing
	}()
	return r, nil
}

// read times every line until the pipe ends.
func (r *rawFollower) read(br *bufio.Reader) error {
	var fields struct {
		Cursor string `json:"__CURSOR"`
		RT     string `json:"__REALTIME_TIMESTAMP"`
	}
	for {
		line, err := br.ReadSlice('\n')
		arrived := time.Now()
		if errors.Is(err, bufio.ErrBufferFull) {
			// Longer than the buffer: bringup's fields hold no such line
			// for this unit; count it rather than time half of it.
			r.mu.Lock()
			r.bad++
			r.mu.Unlock()
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
			continue
		}
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrClosedPipe) {
				return nil
			}
			return fmt.Errorf("raw follower %s: %w", r.host, err)
		}
		fields.Cursor, fields.RT = "", ""
		us, perr := int64(0), json.Unmarshal(line, &fields)
		if perr == nil {
			us, perr = strconv.ParseInt(fields.RT, 10, 64)
		}
		r.mu.Lock()
		if perr != nil || fields.Cursor == "" {
			r.bad++
		} else {
			r.lines[fields.Cursor] = rawLine{ts: time.UnixMicro(us), arrived: arrived}
		}
		r.mu.Unlock()
	}
}

// stop ends the follower and returns what it saw.
func (r *rawFollower) stop() (map[string]rawLine, int) {
	if r.cmd.Process != nil {
		_ = r.cmd.Process.Kill()
	}
	<-r.done
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lines, r.bad
}

// rawRun runs remote on host through ssh and returns how long it took and
// how many bytes and lines it printed.
func rawRun(ctx context.Context, sshConfig, host, remote string) (time.Duration, int64, int64, error) {
	cmd := exec.CommandContext(ctx, "ssh", rawArgs(sshConfig, host, remote)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 0, 0, 0, fmt.Errorf("ssh %s: %w", host, err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, 0, 0, fmt.Errorf("ssh %s: %w", host, err)
	}
	var c lineCounter
	_, cerr := io.Copy(&c, out)
	werr := cmd.Wait()
	took := time.Since(start)
	if err := errors.Join(cerr, werr); err != nil {
		return took, c.bytes, c.lines, fmt.Errorf("ssh %s %q: %w: %s", host, remote, err, strings.TrimSpace(stderr.String()))
	}
	return took, c.bytes, c.lines, nil
}

// lineCounter counts the bytes and lines written to it.
type lineCounter struct{ bytes, lines int64 }

func (c *lineCounter) Write(p []byte) (int, error) {
	c.bytes += int64(len(p))
	for _, b := range p {
		if b == '\n' {
			c.lines++
		}
	}
	return len(p), nil
}

// quietFollowers are raw followers whose output is thrown away, for the
// steady state: what N plain `ssh host journalctl -f` cost while the
// hosts are quiet, measured from /proc like bringup's own.
type quietFollowers struct {
	cmds []*exec.Cmd
}

func startQuietFollowers(ctx context.Context, sshConfig string, hosts []string, unit string) (*quietFollowers, error) {
	q := &quietFollowers{}
	for _, h := range hosts {
		// Stdout nil: /dev/null, read by no one here.
		cmd := exec.CommandContext(ctx, "ssh", rawArgs(sshConfig, h, followCmd(unit, time.Now()))...)
		if err := cmd.Start(); err != nil {
			q.stop()
			return nil, fmt.Errorf("quiet follower %s: %w", h, err)
		}
		q.cmds = append(q.cmds, cmd)
	}
	return q, nil
}

// usage sums the followers' CPU and resident memory.
func (q *quietFollowers) usage() (cpu time.Duration, rss int64, err error) {
	for _, c := range q.cmds {
		t, err := procCPU(c.Process.Pid)
		if err != nil {
			return 0, 0, err
		}
		r, err := procRSS(strconv.Itoa(c.Process.Pid))
		if err != nil {
			return 0, 0, err
		}
		cpu, rss = cpu+t, rss+r
	}
	return cpu, rss, nil
}

func (q *quietFollowers) stop() {
	for _, c := range q.cmds {
		_ = c.Process.Kill()
		_ = c.Wait()
	}
}
