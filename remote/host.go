package remote

// Host is a host's identity, the one shape every layer passes on from the
// config to the driver: the config produces it, the live and store
// layers carry it inside their own target and options (which add what
// only their IO needs: the SSH target, the probe, the store query), and
// the fleet's specs and states take its name and unit from it.
type Host struct {
	// Name is how bringup shows and selects the host, as the user wrote it.
	Name string
	// Unit is the systemd unit watched, e.g. sglang.service.
	Unit string
	// Engine is the server the unit runs: "sglang", "vllm" or "auto".
	Engine string
	// Labels are the host's labels (rack: r12); the console can group its
	// table by any label key. nil when it has none.
	Labels map[string]string
}
