package live

import (
	"context"
	"fmt"

	"github.com/bringup-dev/bringup/remote"
)

// OnDemand performs a host's actions over SSH when the host is otherwise
// followed another way (a log store): each action opens its own
// connection and closes it when done, so that a fleet read from the store
// holds no SSH connection to a host nobody acts on.
type OnDemand struct{ opts Options }

// NewOnDemand returns the actor for one host. It connects only in Do.
func NewOnDemand(opts Options) *OnDemand { return &OnDemand{opts: opts} }

// Do opens a connection, performs a over it as a live host does, and
// closes it. A mode change's one-key undo is not kept across actions:
// each action has a fresh host.
func (o *OnDemand) Do(ctx context.Context, a remote.Action, emit remote.Emit) error {
	h := New(o.opts)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = h.conn.Run(ctx)
	}()
	defer func() {
		cancel()
		<-done
	}()
	// The action's commands run on the connection as it is (they do not
	// wait for one): connect first, failing at once on a refused key.
	if _, err := h.conn.Client(ctx); err != nil {
		return fmt.Errorf("%s: %s over SSH: %w", o.opts.Name, a, err)
	}
	return h.Do(ctx, a, emit)
}
