package sshx

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"golang.org/x/crypto/ssh"
)

// DefaultAnswerWithin bounds how long a host that accepted the login may
// take to answer a channel open or an exec request. sshd answers both in
// milliseconds, a loaded host in a second or two; a host that takes longer
// has stalled after the login (a PAM session module waiting on a hung
// logind, a full disk, a stopped sshd child), and without a bound every
// stream, action and check waited on it for ever, the host shown up. It
// is below status's 15 s and doctor's 20 s, so that both say the stall.
const DefaultAnswerWithin = 10 * time.Second

// ErrStalled is what every StallError is (errors.Is).
var ErrStalled = errors.New("the host stalled after the login")

// StallError says a host accepted the login but did not answer a channel
// open or an exec request within the bound.
type StallError struct {
	Host  string
	What  string // "a session", "a channel to unix /run/…"
	After time.Duration
}

func (e *StallError) Error() string {
	return fmt.Sprintf("%s accepted the login but did not answer %s for %s s", e.Host, e.What,
		strconv.FormatFloat(e.After.Round(100*time.Millisecond).Seconds(), 'f', -1, 64))
}

// Is makes every StallError ErrStalled.
func (e *StallError) Is(target error) bool { return target == ErrStalled }

// answerWithin is the connection's bound on an answer.
func (c *Conn) answerWithin() time.Duration {
	if c.opts.AnswerWithin > 0 {
		return c.opts.AnswerWithin
	}
	return DefaultAnswerWithin
}

// answered runs open on cl (a channel open, an exec request: what names
// it for the error) and waits for its answer for at most the
// connection's bound, or until ctx ends. Past the bound the host has
// stalled: cl is closed with the StallError as the cause of its end
// (hold reports it; Run dials again), and what open still returns is
// handed to discard. The goroutine running open ends at the latest when
// cl is closed.
func answered[T any](ctx context.Context, c *Conn, cl *ssh.Client, what string, open func() (T, error), discard func(T)) (T, error) {
	type result struct {
		v   T
		err error
	}
	res := make(chan result, 1)
	go func() {
		v, err := open()
		res <- result{v, err}
	}()
	late := func() {
		go func() {
			if r := <-res; r.err == nil {
				discard(r.v)
			}
		}()
	}
	bound := c.answerWithin()
	t := time.NewTimer(bound)
	defer t.Stop()
	var zero T
	select {
	case r := <-res:
		return r.v, r.err
	case <-ctx.Done():
		late()
		return zero, fmt.Errorf("%s: waiting for an answer to %s: %w", c.cfg.Alias, what, ctx.Err())
	case <-t.C:
		late()
		err := &StallError{Host: c.cfg.Alias, What: what, After: bound}
		c.stalled(cl, err)
		return zero, err
	}
}

// stalled closes cl, which stalled with err, recording err as why it
// ended.
func (c *Conn) stalled(cl *ssh.Client, err *StallError) {
	c.mu.Lock()
	if c.stall == nil || c.stall.cl != cl {
		c.stall = &clientStall{cl: cl, err: err}
	}
	c.mu.Unlock()
	cl.Close()
}

// clientStall is the stall that ended a client.
type clientStall struct {
	cl  *ssh.Client
	err *StallError
}

// stallOf is the stall that ended cl, nil if none did; it lets go of
// the ended client.
func (c *Conn) stallOf(cl *ssh.Client) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stall != nil && c.stall.cl == cl {
		err := c.stall.err
		c.stall = nil
		return err
	}
	return nil
}

// verify opens a session on a fresh client and closes it again, within
// the bound: a host that accepted the login but answers no channel is
// not up. After a stall on an exec, the session runs `true` too, so that
// a host whose sessions open but whose commands hang is not reported up
// only to stall again.
func (c *Conn) verify(ctx context.Context, cl *ssh.Client, withExec bool) error {
	s, err := c.newSession(ctx, cl)
	if err != nil {
		return err
	}
	defer s.Close()
	if !withExec {
		return nil
	}
	if err := c.start(ctx, cl, s, "start", "true"); err != nil {
		return err
	}
	c.mu.Lock()
	c.execStall = false // it answers commands again
	c.mu.Unlock()
	return nil
}
