package live

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"bringup/remote/event"
	"bringup/remote/sshx"
	"bringup/remote/unitname"
)

// TestRunRefusesBadUnit: a unit name that is a glob (or otherwise not one
// unit) ends Run at once with unitname.ErrInvalid, before any dial: the
// fleet shows it as the host's error, and nothing retries it every few
// seconds as the unit watch used to.
func TestRunRefusesBadUnit(t *testing.T) {
	for _, unit := range []string{"sglang*", "sgl?ng.service", "sglang.servce"} {
		h := New(Options{Name: "gpu1", Unit: unit, NoGPU: true,
			SSH: sshx.Config{Alias: "gpu1", HostName: "127.0.0.1", Port: 1, User: "root"}})
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		var emitted []event.Event
		err := h.Run(ctx, func(ev event.Event) bool { emitted = append(emitted, ev); return true })
		late := ctx.Err()
		cancel()
		if !errors.Is(err, unitname.ErrInvalid) || !strings.Contains(err.Error(), "gpu1") || !strings.Contains(err.Error(), unit) {
			t.Errorf("unit %q: Run = %v, want unitname.ErrInvalid naming the host and the unit", unit, err)
		}
		if late != nil || len(emitted) > 0 {
			t.Errorf("unit %q: Run went on (deadline: %v, %d events) instead of refusing at once", unit, late, len(emitted))
		}
	}
}
