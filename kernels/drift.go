package kernels

import (
	"fmt"
	"sort"
)

// DriftState is how one host's deployed content compares with the local
// build.
type DriftState int

// The drift states.
const (
	DriftUnknown DriftState = iota // the host's hash (or the build's) is not known
	DriftSame                      // the host has the local build
	DriftDiffers                   // the host has something else
)

func (s DriftState) String() string {
	switch s {
	case DriftSame:
		return "same"
	case DriftDiffers:
		return "differs"
	case DriftUnknown:
	}
	return "unknown"
}

// Drift compares the hosts' content hashes with the local build's and
// with each other.
type Drift struct {
	Hosts map[string]DriftState
	// Versions is the number of distinct hashes among the hosts whose
	// hash is known; more than one means the hosts disagree.
	Versions int
	// Differ counts the hosts in DriftDiffers.
	Differ int
}

// CompareHashes computes the drift of hosts (name → content hash, "" when
// unknown) against the local build's hash (local, "" when unknown). It is
// pure: the fleet view gets the hashes (remote/deploy's Record,
// DeployedHash or RemoteHash, or infersim's log line) and shows Badge.
func CompareHashes(local string, hosts map[string]string) Drift {
	d := Drift{Hosts: make(map[string]DriftState, len(hosts))}
	seen := map[string]bool{}
	for name, h := range hosts {
		switch {
		case h == "":
			d.Hosts[name] = DriftUnknown
			continue
		case local == "":
			d.Hosts[name] = DriftUnknown
		case h == local:
			d.Hosts[name] = DriftSame
		default:
			d.Hosts[name] = DriftDiffers
			d.Differ++
		}
		seen[h] = true
	}
	d.Versions = len(seen)
	return d
}

// Drifting is true when the badge should show: some host differs from
// the build, or the hosts disagree among themselves.
func (d Drift) Drifting() bool { return d.Differ > 0 || d.Versions > 1 }

// Badge is the fleet table's short drift text, "" when there is no drift:
// "drift 1/3" (hosts differing from the build / hosts) or "drift: 2
// versions" when the build's hash is unknown but the hosts disagree.
func (d Drift) Badge() string {
	switch {
	case d.Differ > 0:
		return fmt.Sprintf("drift %d/%d", d.Differ, len(d.Hosts))
	case d.Versions > 1:
		return fmt.Sprintf("drift: %d versions", d.Versions)
	}
	return ""
}

// Differing lists the hosts in DriftDiffers, sorted.
func (d Drift) Differing() []string {
	var out []string
	for name, s := range d.Hosts {
		if s == DriftDiffers {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}
