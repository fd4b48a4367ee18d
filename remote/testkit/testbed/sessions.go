package testbed

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
)

// FastStartEnv keeps a test host's startup to a few seconds while every
// phase still shows (infersim's phase timings; merge into HostOptions.Env).
var FastStartEnv = map[string]string{
	"INFERSIM_BOOT_SECONDS": "0.2", "INFERSIM_INIT_SECONDS": "0.5", "INFERSIM_WEIGHTS_SECONDS": "2",
	"INFERSIM_SHARDS": "4", "INFERSIM_KV_SECONDS": "0.5", "INFERSIM_CAPTURE_SECONDS": "1",
	"INFERSIM_HTTP_SECONDS": "0.3", "INFERSIM_WARMUP_SECONDS": "0.5",
}

// SSHSessions counts the established connections to each host's sshd,
// read with ss in the host's own network namespace (not over SSH, which
// would add one): a host with none is absent from the map.
func (tb *Testbed) SSHSessions(ctx context.Context) (map[string]int, error) {
	out := map[string]int{}
	for _, h := range tb.Hosts() {
		b, err := exec.CommandContext(ctx, "ip", "netns", "exec", h.NetNS, "ss", "-Htn", "state", "established", "( sport = :22 )").Output()
		if err != nil {
			return nil, fmt.Errorf("%s: ss: %w", h.Name, err)
		}
		if s := strings.TrimSpace(string(b)); s != "" {
			out[h.Name] = strings.Count(s, "\n") + 1
		}
	}
	return out, nil
}
