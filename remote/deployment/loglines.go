package deployment

import (
	"regexp"
	"strings"
)

// serverArgsField finds one keyword of SGLang's server_args line
// (server_args=ServerArgs(... dist_init_addr='10.0.0.1:5000', nnodes=2,
// node_rank=1, ...)): its name and its value, quoted or not.
var serverArgsField = regexp.MustCompile(`\b(nnodes|node_rank|dist_init_addr|nccl_init_addr)=('[^']*'|[^,)\s]+)`)

// FromLogLine reads what one line of a node's log says of its place in
// a deployment: SGLang's server_args line, or the launch command line a
// log often begins with (a shell's echo, a ticket's paste). A line that
// says neither, or says a single node, is not one.
func FromLogLine(msg string) (Role, bool) {
	if i := strings.Index(msg, "ServerArgs("); i >= 0 {
		var args []string
		for _, m := range serverArgsField.FindAllStringSubmatch(msg[i:], -1) {
			v := strings.Trim(m[2], "'")
			if v == "None" {
				continue
			}
			args = append(args, "--"+m[1]+"="+v)
		}
		return Parse(strings.Join(args, " "))
	}
	if !strings.Contains(msg, "--nnodes") && !strings.Contains(msg, "--data-parallel-address") && !strings.Contains(msg, "ray start") {
		return Role{}, false
	}
	return Parse(msg)
}
