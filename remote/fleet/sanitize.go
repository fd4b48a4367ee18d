package fleet

import (
	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/sanitize"
)

// sanitizeEvent passes every remote string of ev through the sanitiser:
// the UI and every other reader trust what the fleet hands out, so a field
// missed here reaches the terminal raw (a replayed recording can put
// anything in any field). Only the journal cursor is left byte-exact: it
// is an opaque token for journald, never shown.
func sanitizeEvent(ev *event.Event) {
	if j := ev.Journal; j != nil {
		var cut bool
		j.Message, cut = sanitize.Line(j.Message, sanitize.DefaultMax)
		j.Truncated = j.Truncated || cut
		j.Unit = sanitize.String(j.Unit)
		j.InvocationID = sanitize.String(j.InvocationID)
		j.MessageID = sanitize.String(j.MessageID)
		for k, v := range j.Fields {
			j.Fields[k] = sanitize.String(v)
		}
	}
	if u := ev.Unit; u != nil {
		u.Name = sanitize.String(u.Name)
		u.LoadState = sanitize.String(u.LoadState)
		u.ActiveState = sanitize.String(u.ActiveState)
		u.SubState = sanitize.String(u.SubState)
		u.Result = sanitize.String(u.Result)
		u.InvocationID = sanitize.String(u.InvocationID)
		u.ExecStart = sanitize.String(u.ExecStart)
		u.Path = sanitize.String(u.Path)
		for i, v := range u.Environment {
			u.Environment[i] = sanitize.String(v)
		}
		for i, v := range u.DropInPaths {
			u.DropInPaths[i] = sanitize.String(v)
		}
	}
	if c := ev.Conn; c != nil {
		c.State = event.ConnState(sanitize.String(string(c.State)))
		c.Err = sanitize.String(c.Err)
	}
	if p := ev.Probe; p != nil {
		p.Path = sanitize.String(p.Path)
		p.Err = sanitize.String(p.Err)
	}
	if a := ev.Action; a != nil {
		a.Name = sanitize.String(a.Name)
		a.Stage = event.ActionStage(sanitize.String(string(a.Stage)))
		a.Detail = sanitize.String(a.Detail)
		a.Err = sanitize.String(a.Err)
		if b := a.Bench; b != nil {
			c := *b // the driver's copy stays its own
			c.Model, c.FirstError = sanitize.String(c.Model), sanitize.String(c.FirstError)
			a.Bench = &c
		}
	}
	if g := ev.Gap; g != nil {
		g.Reason = sanitize.String(g.Reason)
		g.Message = sanitize.String(g.Message)
	}
	if c := ev.Command; c != nil {
		c.Via = sanitize.String(c.Via)
		c.Text = sanitize.String(c.Text)
		c.Result = sanitize.String(c.Result)
		c.Err = sanitize.String(c.Err)
	}
	if g := ev.GPU; g != nil {
		for i := range g.Devices {
			g.Devices[i].Name = sanitize.String(g.Devices[i].Name)
		}
	}
}
