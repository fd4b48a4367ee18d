// Package deployment finds the hosts that serve one model together: a
// multi-node SGLang (--nnodes N --node-rank i --dist-init-addr HOST:PORT),
// a vLLM whose data-parallel ranks span nodes (--data-parallel-address,
// --data-parallel-start-rank, --headless) or whose ranks meet at a master
// (--nnodes, --node-rank, --master-addr), and a Ray cluster (ray start
// --head / --address). Each node runs its own unit; the package reads each
// unit's ExecStart (Parse), groups the units that name the same
// rendezvous (Infer), and merges what the config declares (Merge), which
// wins. It is pure: the caller hands it the command lines.
package deployment

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/bringup-dev/bringup/remote"
)

// The kinds of deployment, from the launcher's flags.
const (
	KindSGLang   = "sglang"   // --nnodes/--node-rank/--dist-init-addr
	KindVLLMDP   = "vllm-dp"  // --data-parallel-address and friends
	KindVLLM     = "vllm"     // vLLM's --nnodes/--node-rank/--master-addr
	KindRay      = "ray"      // ray start --head / --address
	KindDeclared = "declared" // the config's deployments: section
)

// defaultRayPort is ray start --head's --port default (the GCS port the
// workers' --address names).
const defaultRayPort = 6379

// Role is what one unit's command line says of its place in a deployment.
type Role struct {
	Kind string
	// Rendezvous is the HOST:PORT every node of the deployment names (the
	// dist-init address, the data-parallel address and RPC port, the Ray
	// head's GCS address). A Ray head that names no --node-ip-address
	// has only ":PORT": its host is the node's own (Infer fills it).
	Rendezvous string
	// Nodes is how many nodes the deployment has, when the line says
	// (--nnodes, or vLLM's data-parallel size over the local size); 0
	// when it does not.
	Nodes int
	// Rank is the node's rank: 0 is the head, which the others join.
	// RankKnown is false where the line gives no number (a Ray worker, a
	// vLLM headless node without a start rank): Infer orders those after
	// the ranked ones.
	Rank      int
	RankKnown bool
}

// Head reports whether the node is the one the others rendezvous with.
func (r Role) Head() bool { return r.RankKnown && r.Rank == 0 }

// Parse reads one unit's ExecStart (as systemctl shows it: the argv
// joined by spaces, or a shell line under sh -c) and says whether it is
// one node of a multi-node deployment. A single-node server (no
// --nnodes, or --nnodes 1) is not.
func Parse(execStart string) (Role, bool) {
	flags, words := scan(execStart)
	switch {
	case slices.Contains(words, "ray") && slices.Contains(words, "start"):
		return parseRay(flags)
	case flags.has("data-parallel-address"):
		return parseVLLMDP(flags)
	case flags.has("nnodes"):
		return parseNNodes(flags)
	}
	return Role{}, false
}

// parseNNodes reads SGLang's and vLLM's torchrun-like flags.
func parseNNodes(f flagSet) (Role, bool) {
	n, err := strconv.Atoi(f.get("nnodes"))
	if err != nil || n < 2 {
		return Role{}, false
	}
	r := Role{Kind: KindSGLang, Nodes: n}
	// SGLang's --dist-init-addr was --nccl-init-addr before 0.3.
	addr := f.first("dist-init-addr", "nccl-init-addr")
	if addr == "" && f.has("master-addr") {
		r.Kind = KindVLLM
		addr = joinHostPort(f.get("master-addr"), f.get("master-port"))
	}
	if addr == "" {
		return Role{}, false
	}
	r.Rendezvous = addr
	r.Rank, r.RankKnown = 0, true // --node-rank defaults to 0
	if v := f.get("node-rank"); v != "" {
		rank, err := strconv.Atoi(v)
		if err != nil || rank < 0 || rank >= n {
			return Role{}, false
		}
		r.Rank = rank
	}
	return r, true
}

// parseVLLMDP reads vLLM's multi-node data parallel: the head runs the
// API server and the first --data-parallel-size-local ranks; every other
// node is --headless from its --data-parallel-start-rank.
func parseVLLMDP(f flagSet) (Role, bool) {
	r := Role{Kind: KindVLLMDP, Rendezvous: joinHostPort(f.get("data-parallel-address"), f.get("data-parallel-rpc-port"))}
	size, _ := strconv.Atoi(f.get("data-parallel-size"))
	local, _ := strconv.Atoi(f.get("data-parallel-size-local"))
	if size > 0 && local > 0 && size%local == 0 {
		r.Nodes = size / local
	}
	start, err := strconv.Atoi(f.get("data-parallel-start-rank"))
	switch {
	case err == nil && start == 0 || err != nil && !f.has("headless"):
		r.Rank, r.RankKnown = 0, true
	case err == nil && local > 0 && start%local == 0:
		r.Rank, r.RankKnown = start/local, true
	}
	if r.Nodes == 1 {
		return Role{}, false
	}
	return r, true
}

// parseRay reads ray start: --head (with --port, --node-ip-address) or a
// worker's --address.
func parseRay(f flagSet) (Role, bool) {
	r := Role{Kind: KindRay}
	switch {
	case f.has("head"):
		port := f.get("port")
		if port == "" {
			port = strconv.Itoa(defaultRayPort)
		}
		r.Rendezvous = f.get("node-ip-address") + ":" + port
		r.Rank, r.RankKnown = 0, true
	case f.get("address") != "" && f.get("address") != "auto":
		r.Rendezvous = f.get("address")
		if !strings.Contains(r.Rendezvous, ":") {
			r.Rendezvous += ":" + strconv.Itoa(defaultRayPort)
		}
	default:
		return Role{}, false
	}
	return r, true
}

func joinHostPort(host, port string) string {
	if host == "" {
		return ""
	}
	if port == "" {
		return host
	}
	return host + ":" + port
}

// flagSet is a command line's long flags, names with "_" as "-"; a flag
// given twice keeps its last value, as argparse does.
type flagSet map[string]string

func (f flagSet) has(name string) bool   { _, ok := f[name]; return ok }
func (f flagSet) get(name string) string { return f[name] }
func (f flagSet) first(names ...string) string {
	for _, n := range names {
		if v := f[n]; v != "" {
			return v
		}
	}
	return ""
}

// scan splits a command line into its long flags and its bare words.
// Quotes are dropped rather than honoured (--address='H:P' is --address=H:P): systemctl shows the argv
// joined by spaces, and a shell line under sh -c keeps the flags as
// words of their own either way. A flag's value is the next word unless
// that is a flag too (--headless, --head take none).
func scan(line string) (flagSet, []string) {
	words := strings.Fields(strings.NewReplacer(`"`, "", `'`, "", `\`, " ", ";", " ", "&&", " ").Replace(line))
	flags := flagSet{}
	var bare []string
	for i := 0; i < len(words); i++ {
		w := words[i]
		name, ok := strings.CutPrefix(w, "--")
		if !ok || name == "" {
			bare = append(bare, w)
			continue
		}
		value, hasValue := "", false
		if n, v, cut := strings.Cut(name, "="); cut {
			name, value, hasValue = n, v, true
		}
		name = strings.ReplaceAll(name, "_", "-")
		if !hasValue && i+1 < len(words) && !strings.HasPrefix(words[i+1], "-") && valued(name) {
			value = words[i+1]
			i++
		}
		flags[name] = value
	}
	return flags, bare
}

// valued says which of the flags read here take a value: the rest
// (--headless, --head, --block) are switches, and the word after them
// is the next argument.
func valued(name string) bool {
	switch name {
	case "headless", "head", "block":
		return false
	}
	return true
}

// Node is one host of a deployment.
type Node struct {
	Host string `json:"host"`
	// Rank is the node's rank; 0 is the head. Nodes whose lines give no
	// rank are numbered after the ranked ones, in host order.
	Rank int `json:"rank"`
}

// Deployment is the hosts that serve one model together.
type Deployment struct {
	// Name is the config's name, or the rendezvous address of an
	// inferred one.
	Name string `json:"name"`
	Kind string `json:"kind"`
	// Rendezvous is the HOST:PORT the nodes meet at; "" for a declared
	// one.
	Rendezvous string `json:"rendezvous,omitempty"`
	// Nodes are in rank order, the head first.
	Nodes []Node `json:"nodes"`
	// Size is the number of nodes the command lines say it has (0: they
	// do not say); more than len(Nodes) means some nodes are not watched.
	Size int `json:"size,omitempty"`
	// Problems are what does not add up: a rank given twice, nodes the
	// lines name that are not watched, lines that disagree on the size.
	Problems []string `json:"problems,omitempty"`
}

// Hosts are the deployment's hosts in rank order.
func (d Deployment) Hosts() []string {
	out := make([]string, len(d.Nodes))
	for i, n := range d.Nodes {
		out[i] = n.Host
	}
	return out
}

// Unit is one watched host's unit as Infer reads it.
type Unit struct {
	Host string
	// Addrs are the names the host is reached by (its name, address,
	// host name): a Ray head that names no --node-ip-address is known
	// to its workers by one of them.
	Addrs     []string
	ExecStart string
}

// Infer groups the units whose command lines name the same rendezvous
// into deployments, in the order of their head's first unit. A
// rendezvous only one unit names is no deployment (its peers are not
// watched) unless that unit says it has several nodes: then it is one,
// with the missing nodes a problem.
func Infer(units []Unit) []Deployment {
	var members []Member
	for _, u := range units {
		if r, ok := Parse(u.ExecStart); ok {
			members = append(members, Member{Host: u.Host, Addrs: u.Addrs, Role: r})
		}
	}
	return InferRoles(members)
}

// Member is a host whose role is known, from its unit's command line
// (Parse) or from what its log says of it (FromLogLine).
type Member struct {
	Host  string
	Addrs []string // as Unit's
	Role  Role
}

// InferRoles is Infer over roles already read.
func InferRoles(members []Member) []Deployment {
	type member struct {
		unit Unit
		role Role
	}
	byKey := map[string][]member{}
	var order []string
	var heads []member // Ray heads that name no address of their own
	for _, m := range members {
		u, r := Unit{Host: m.Host, Addrs: m.Addrs}, m.Role
		if r.Head() && ownAddress(r.Rendezvous) {
			r.Rendezvous = r.Rendezvous[strings.LastIndex(r.Rendezvous, ":"):]
			heads = append(heads, member{u, r})
			continue
		}
		k := key(r.Kind, r.Rendezvous)
		if _, seen := byKey[k]; !seen {
			order = append(order, k)
		}
		byKey[k] = append(byKey[k], member{u, r})
	}
	for _, h := range heads {
		k := key(h.role.Kind, h.unit.Host+h.role.Rendezvous)
		for _, a := range h.unit.Addrs {
			if c := key(h.role.Kind, a+h.role.Rendezvous); byKey[c] != nil {
				k = c
				break
			}
		}
		h.role.Rendezvous = strings.TrimPrefix(k, h.role.Kind+" ")
		if _, seen := byKey[k]; !seen {
			order = append(order, k)
		}
		byKey[k] = append([]member{h}, byKey[k]...)
	}
	var out []Deployment
	for _, k := range order {
		ms := byKey[k]
		if len(ms) < 2 && ms[0].role.Nodes < 2 {
			continue
		}
		d := Deployment{Name: ms[0].role.Rendezvous, Kind: ms[0].role.Kind, Rendezvous: ms[0].role.Rendezvous}
		hosts := make([]Member, len(ms))
		for i, m := range ms {
			hosts[i] = Member{Host: m.unit.Host, Role: m.role}
		}
		out = append(out, assemble(d, hosts, true))
	}
	return out
}

// Named is the deployment the caller names (bringup explain's
// --deployment): members in rank order where their roles say one, the
// rest after them in the order given.
func Named(name string, members []Member) Deployment {
	d := Deployment{Name: name, Kind: KindDeclared}
	for _, m := range members {
		if m.Role.Kind != "" && d.Kind == KindDeclared {
			d.Kind, d.Rendezvous = m.Role.Kind, m.Role.Rendezvous
		}
	}
	return assemble(d, members, false)
}

// assemble puts members into d as its nodes: the ranked ones in rank
// order, then those whose rank is not known (or given twice) in the
// order of members (by host name where byHost), numbered after them;
// what does not add up is a problem.
func assemble(d Deployment, members []Member, byHost bool) Deployment {
	ranked := map[int]string{}
	var unranked []string
	for _, m := range members {
		if m.Role.Nodes > 0 {
			if d.Size != 0 && d.Size != m.Role.Nodes {
				d.Problems = append(d.Problems, fmt.Sprintf("%s says %d nodes, another node %d", m.Host, m.Role.Nodes, d.Size))
			}
			d.Size = max(d.Size, m.Role.Nodes)
		}
		if !m.Role.RankKnown {
			unranked = append(unranked, m.Host)
			continue
		}
		if other, dup := ranked[m.Role.Rank]; dup {
			d.Problems = append(d.Problems, fmt.Sprintf("%s and %s both say node rank %d", other, m.Host, m.Role.Rank))
			unranked = append(unranked, m.Host)
			continue
		}
		ranked[m.Role.Rank] = m.Host
	}
	ranks := make([]int, 0, len(ranked))
	for r := range ranked {
		ranks = append(ranks, r)
	}
	slices.Sort(ranks)
	for _, r := range ranks {
		d.Nodes = append(d.Nodes, Node{Host: ranked[r], Rank: r})
	}
	next := 0
	if len(ranks) > 0 {
		next = ranks[len(ranks)-1] + 1
	}
	if byHost {
		slices.Sort(unranked)
	}
	for i, h := range unranked {
		d.Nodes = append(d.Nodes, Node{Host: h, Rank: next + i})
	}
	if d.Size > len(d.Nodes) {
		d.Problems = append(d.Problems, fmt.Sprintf("%d of %d nodes watched", len(d.Nodes), d.Size))
	}
	return d
}

func key(kind, rendezvous string) string { return kind + " " + rendezvous }

// ownAddress reports whether a head's rendezvous names no address the
// other nodes can use (a Ray head without --node-ip-address, a head that
// binds 0.0.0.0 or loopback while its peers name its address): the head
// is then known by its own names.
func ownAddress(rendezvous string) bool {
	i := strings.LastIndex(rendezvous, ":")
	if i < 0 {
		return false
	}
	switch strings.Trim(rendezvous[:i], "[]") {
	case "", "0.0.0.0", "::", "127.0.0.1", "localhost", "::1":
		return true
	}
	return false
}

// Declared is a deployment the config names: its hosts in rank order.
type Declared struct {
	Name  string
	Hosts []string
}

// Merge puts the declared deployments first, in the config's order, then
// the inferred ones none of whose hosts a declared one holds: the config
// wins where it says. A declared deployment whose hosts an inferred one
// holds in another order keeps the config's order, with a problem that
// says the command lines disagree.
func Merge(declared []Declared, inferred []Deployment) []Deployment {
	owner := map[string]int{}
	var out []Deployment
	for _, d := range declared {
		dep := Deployment{Name: d.Name, Kind: KindDeclared, Size: len(d.Hosts)}
		for i, h := range d.Hosts {
			dep.Nodes = append(dep.Nodes, Node{Host: h, Rank: i})
			owner[h] = len(out)
		}
		out = append(out, dep)
	}
	for _, inf := range inferred {
		taken := -1
		for _, n := range inf.Nodes {
			if i, ok := owner[n.Host]; ok {
				taken = i
				break
			}
		}
		if taken < 0 {
			out = append(out, inf)
			continue
		}
		dec := &out[taken]
		if dec.Rendezvous == "" {
			dec.Rendezvous = inf.Rendezvous
		}
		for _, n := range inf.Nodes {
			if i, ok := owner[n.Host]; !ok || i != taken {
				dec.Problems = append(dec.Problems, fmt.Sprintf("%s meets %s at %s but is not declared in it", n.Host, dec.Name, inf.Rendezvous))
				continue
			}
			if declaredRank(*dec, n.Host) != n.Rank {
				dec.Problems = append(dec.Problems, fmt.Sprintf("%s is node %d in the config, node-rank %d on its command line", n.Host, declaredRank(*dec, n.Host), n.Rank))
			}
		}
	}
	return out
}

func declaredRank(d Deployment, host string) int {
	for _, n := range d.Nodes {
		if n.Host == host {
			return n.Rank
		}
	}
	return -1
}

// Of is the deployment that holds host, and the host's node in it.
func Of(deps []Deployment, host string) (Deployment, Node, bool) {
	for _, d := range deps {
		for _, n := range d.Nodes {
			if n.Host == host {
				return d, n, true
			}
		}
	}
	return Deployment{}, Node{}, false
}

// FromStates is the deployments of a fleet: the declared ones that hold
// a watched host (a fleet cut to some hosts with -H leaves the others
// out), then those the units' command lines (each host's
// UnitState.ExecStart, as the fleet last read it) say. A host is known
// to its peers by its name.
func FromStates(declared []Declared, hosts []remote.HostState) []Deployment {
	units := make([]Unit, 0, len(hosts))
	watched := make(map[string]bool, len(hosts))
	for _, h := range hosts {
		watched[h.Name] = true
		if h.UnitState.ExecStart != "" {
			units = append(units, Unit{Host: h.Name, Addrs: []string{h.Name}, ExecStart: h.UnitState.ExecStart})
		}
	}
	var kept []Declared
	for _, d := range declared {
		if slices.ContainsFunc(d.Hosts, func(h string) bool { return watched[h] }) {
			kept = append(kept, d)
		}
	}
	return Merge(kept, Infer(units))
}
