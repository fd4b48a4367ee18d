package output

import (
	"fmt"
	"io"

	"github.com/bringup-dev/bringup/remote/doctor"
)

// Doctor prints one host's checks, a fix under each that failed. Their
// text quotes the host (stderr, the SSH server's messages); remote/doctor
// sanitised it where the report was made, the one point it leaves remote/.
func Doctor(w io.Writer, r *doctor.Report) {
	fmt.Fprintf(w, "%s (%s)\n", r.Host, r.Target)
	for _, c := range r.Checks {
		fmt.Fprintf(w, "  %s %-11s %s\n", c.Status.Mark(), c.Name, c.Detail)
		if c.Fix != "" {
			fmt.Fprintf(w, "    %-11s fix: %s\n", "", c.Fix)
		}
	}
}
