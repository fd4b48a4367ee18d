package systemd

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
)

// pipelinedAuth authenticates a system bus stream by its socket's
// credentials (EXTERNAL) without waiting for the bus: the whole exchange
// ("AUTH EXTERNAL", an empty DATA, BEGIN) goes out at once, as sd-bus
// sends it, and the messages after it (Hello and the watch's first calls)
// follow without waiting either. godbus authenticates in lock-step: a
// query for the mechanisms, AUTH EXTERNAL, the empty DATA, each waiting
// for the bus, three round trips that at 256 hosts reached at once took
// half a second. godbus's own exchange is answered here, as the bus would
// answer it, and never reaches the bus; the bus's answer to the real one
// is read, and checked, before the first message godbus reads.
type pipelinedAuth struct {
	rwc io.ReadWriteCloser
	bus *bufio.Reader // the bus's side of rwc

	mu      sync.Mutex
	local   bytes.Buffer // answers to godbus's exchange, not yet read
	written []byte       // godbus's exchange not yet a whole line
	begun   bool         // godbus said BEGIN: writes go to the bus
	checked bool         // the bus's answer was read and was OK
	err     error        // the bus refused, or its answer did not parse
}

// authPipelined is what goes to the bus first: the NUL byte, AUTH
// EXTERNAL with no identity (the bus takes the socket's), the empty DATA
// answering the bus's challenge, and BEGIN.
const authPipelined = "\x00AUTH EXTERNAL\r\nDATA\r\nBEGIN\r\n"

// maxAuthLine bounds a line of the bus's answer.
const maxAuthLine = 1024

// newPipelinedAuth sends the exchange on rwc and returns the stream to
// hand godbus, to authenticate with dbus.AuthExternal("").
func newPipelinedAuth(rwc io.ReadWriteCloser) (*pipelinedAuth, error) {
	if _, err := io.WriteString(rwc, authPipelined); err != nil {
		return nil, fmt.Errorf("send auth: %w", err)
	}
	return &pipelinedAuth{rwc: rwc, bus: bufio.NewReaderSize(rwc, 4096)}, nil
}

func (p *pipelinedAuth) Write(b []byte) (int, error) {
	p.mu.Lock()
	if p.begun {
		p.mu.Unlock()
		return p.rwc.Write(b)
	}
	defer p.mu.Unlock()
	p.written = append(p.written, b...)
	for {
		i := bytes.Index(p.written, []byte("\r\n"))
		if i < 0 {
			return len(b), nil
		}
		line := string(bytes.TrimPrefix(p.written[:i], []byte{0}))
		p.written = p.written[i+2:]
		switch line {
		case "AUTH":
			p.local.WriteString("REJECTED EXTERNAL\r\n")
		case "AUTH EXTERNAL":
			// The bus's GUID is not known yet; godbus only keeps it.
			p.local.WriteString("OK 00000000000000000000000000000000\r\n")
		case "BEGIN":
			p.begun = true
			if len(p.written) > 0 { // a message in the same write
				rest := p.written
				p.written = nil
				if _, err := p.rwc.Write(rest); err != nil {
					return 0, err
				}
			}
			return len(b), nil
		default:
			return 0, fmt.Errorf("bus auth: unexpected %q from the client", line)
		}
	}
}

func (p *pipelinedAuth) Read(b []byte) (int, error) {
	p.mu.Lock()
	if p.local.Len() > 0 {
		defer p.mu.Unlock()
		return p.local.Read(b)
	}
	if !p.begun {
		p.mu.Unlock()
		return 0, errors.New("bus auth: read before the client's exchange ended")
	}
	if !p.checked && p.err == nil {
		p.err = p.readAnswer()
		p.checked = p.err == nil
	}
	err := p.err
	p.mu.Unlock()
	if err != nil {
		return 0, err
	}
	return p.bus.Read(b)
}

// readAnswer reads the bus's answer to authPipelined: a DATA challenge
// for the identity, then OK and its GUID. A bus that says OK at once gets
// the DATA after it as out of place and answers ERROR before BEGIN; that
// line is read too.
func (p *pipelinedAuth) readAnswer() error {
	challenged := false
	for {
		line, err := p.readLine()
		if err != nil {
			return err
		}
		switch {
		case line == "DATA" || strings.HasPrefix(line, "DATA "):
			challenged = true
		case strings.HasPrefix(line, "OK "):
			if !challenged {
				if extra, err := p.readLine(); err != nil {
					return err
				} else if !strings.HasPrefix(extra, "ERROR") {
					return fmt.Errorf("bus auth: %q after OK", extra)
				}
			}
			return nil
		default: // REJECTED, ERROR: the bus did not take the socket's credentials
			return fmt.Errorf("bus auth: the bus answered %q", line)
		}
	}
}

func (p *pipelinedAuth) readLine() (string, error) {
	var line []byte
	for {
		chunk, err := p.bus.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > maxAuthLine {
			return "", errors.New("bus auth: answer line too long")
		}
		if err == nil {
			break
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return "", fmt.Errorf("bus auth: %w", err)
		}
	}
	return string(bytes.TrimRight(line, "\r\n")), nil
}

func (p *pipelinedAuth) Close() error { return p.rwc.Close() }
