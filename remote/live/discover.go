package live

import (
	"context"

	"github.com/bringup-dev/bringup/remote/sshx"
	"github.com/bringup-dev/bringup/remote/systemd"
)

// Discover connects to the host o names, lists the inference units on it
// (systemd.Discover: services whose ExecStart runs SGLang or vLLM) and
// disconnects. It needs no privileges on the host.
func Discover(ctx context.Context, o Options) ([]systemd.InferenceUnit, error) {
	var found []systemd.InferenceUnit
	err := sshx.WithConn(ctx, o.SSH, sshx.ConnOptions{Dial: o.Dial}, func(c *sshx.Conn) error {
		var err error
		found, err = systemd.Discover(ctx, c, o.Name)
		return err
	})
	return found, err
}
