package testbed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Names. Everything the testbed makes in the machine's shared namespaces
// starts with namePrefix, then the run id, so that a sweep can tell its
// own leftovers from anything else and two runs never pick the same name.
const (
	namePrefix = "brtb"
	// netnsDir is where `ip netns` keeps its named namespaces.
	netnsDir = "/run/netns"
	// maxIfName is the kernel's limit on interface names (IFNAMSIZ-1).
	maxIfName = 15
)

// subnet is the range the testbed takes its /30 links from. 10.213/16 is
// unlikely to be a real network; Up fails if the machine uses any of it.
var subnet = netip.MustParsePrefix("10.213.0.0/16")

// slots is how many /30 links fit in subnet.
const slots = 1 << (32 - 16 - 2)

// netnsName is the network namespace of a run's host; also its machine name.
func netnsName(runID, host string) string { return namePrefix + "-" + runID + "-" + host }

// linkName is the root end of a host's veth pair: at most 15 bytes.
func linkName(runID string, i int) string { return fmt.Sprintf("%s%sh%d", namePrefix, runID, i+1) }

// slotAddrs gives the root-side and host-side addresses of /30 slot k.
func slotAddrs(k int) (root, host netip.Addr) {
	a := subnet.Addr().As4()
	n := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(k)*4
	root = netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n) + 1})
	host = root.Next()
	return root, host
}

// slotOf is the /30 slot of an address in subnet.
func slotOf(a netip.Addr) int {
	b := a.As4()
	return (int(b[2])<<8 | int(b[3])) / 4
}

// ipAddrs lists the IPv4 addresses of the root namespace by interface.
func ipAddrs(ctx context.Context) (map[string][]netip.Prefix, error) {
	out, err := run(ctx, "ip", "-j", "-4", "addr", "show")
	if err != nil {
		return nil, err
	}
	var links []struct {
		IfName   string `json:"ifname"`
		AddrInfo []struct {
			Local     string `json:"local"`
			PrefixLen int    `json:"prefixlen"`
		} `json:"addr_info"`
	}
	if err := json.Unmarshal([]byte(out), &links); err != nil {
		return nil, fmt.Errorf("parse ip -j addr: %w", err)
	}
	m := map[string][]netip.Prefix{}
	for _, l := range links {
		for _, a := range l.AddrInfo {
			ip, err := netip.ParseAddr(a.Local)
			if err != nil {
				continue
			}
			m[l.IfName] = append(m[l.IfName], netip.PrefixFrom(ip, a.PrefixLen))
		}
	}
	return m, nil
}

// usedSlots returns the slots taken by links already up, and fails if any
// interface that is not the testbed's has an address in subnet: using it
// would break that network or be broken by it.
func usedSlots(ctx context.Context) (map[int]bool, error) {
	addrs, err := ipAddrs(ctx)
	if err != nil {
		return nil, err
	}
	used := map[int]bool{}
	for ifname, ps := range addrs {
		for _, p := range ps {
			if !p.Overlaps(subnet) {
				continue
			}
			if strings.HasPrefix(ifname, namePrefix) {
				used[slotOf(p.Addr())] = true
				continue
			}
			// A wider network around subnet (a 10.0.0.0/8 LAN) is no
			// clash: the testbed's /30 routes are more specific. An
			// address or network inside subnet is.
			if subnet.Contains(p.Addr()) || p.Bits() >= subnet.Bits() {
				return nil, fmt.Errorf("address plan clash: %s has %s, inside the testbed's %s", ifname, p, subnet)
			}
		}
	}
	return used, nil
}

// setupNet makes a host's namespace and link and addresses both ends.
func setupNet(ctx context.Context, h *hostState) error {
	steps := [][]string{
		{"ip", "netns", "add", h.NetNS},
		{"ip", "link", "add", h.Link, "type", "veth", "peer", "name", "eth0", "netns", h.NetNS},
		{"ip", "addr", "add", h.RootAddr + "/30", "dev", h.Link},
		{"ip", "link", "set", h.Link, "up"},
		{"ip", "-n", h.NetNS, "addr", "add", h.Addr + "/30", "dev", "eth0"},
		{"ip", "-n", h.NetNS, "link", "set", "eth0", "up"},
		{"ip", "-n", h.NetNS, "link", "set", "lo", "up"},
	}
	for _, s := range steps {
		if _, err := run(ctx, s[0], s[1:]...); err != nil {
			return fmt.Errorf("host %s network: %w", h.Name, err)
		}
	}
	id, err := netnsIDOfFile(filepath.Join(netnsDir, h.NetNS))
	if err != nil {
		return fmt.Errorf("host %s network: %w", h.Name, err)
	}
	h.NetNSID = id
	return nil
}

// teardownNet removes a host's link and namespace if they exist.
func teardownNet(ctx context.Context, h hostState) error {
	var errs []error
	if linkExists(h.Link) {
		if _, err := run(ctx, "ip", "link", "del", h.Link); err != nil && linkExists(h.Link) {
			errs = append(errs, err)
		}
	}
	if err := removeNetns(ctx, h.NetNS); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// removeNetns deletes a named namespace if it exists.
func removeNetns(ctx context.Context, name string) error {
	if _, err := os.Stat(filepath.Join(netnsDir, name)); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if _, err := run(ctx, "ip", "netns", "del", name); err != nil {
		return err
	}
	return nil
}

// linkExists reports whether the root namespace has the interface.
func linkExists(name string) bool {
	_, err := os.Stat(filepath.Join("/sys/class/net", name))
	return err == nil
}

// ownNetns lists the testbed's named network namespaces.
func ownNetns() ([]string, error) {
	ents, err := os.ReadDir(netnsDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", netnsDir, err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), namePrefix+"-") {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// ownLinks lists the testbed's interfaces in the root namespace.
func ownLinks() ([]string, error) {
	ents, err := os.ReadDir("/sys/class/net")
	if err != nil {
		return nil, fmt.Errorf("list interfaces: %w", err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), namePrefix) {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// run runs a command and returns its standard output; the error names the
// command and carries its standard error.
func run(ctx context.Context, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}
