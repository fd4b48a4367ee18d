package output

import (
	"fmt"
	"io"

	"bringup/remote/doctor"
	"bringup/remote/sanitize"
)

// Doctor prints one host's checks, a fix under each that failed. Their
// text quotes the host (stderr, the SSH server's messages): it goes
// through the one sanitiser again here, so that no report, however it was
// built, puts a host's escape sequence on the terminal.
func Doctor(w io.Writer, r *doctor.Report) {
	clean := sanitize.String
	fmt.Fprintf(w, "%s (%s)\n", clean(r.Host), clean(r.Target))
	for _, c := range r.Checks {
		fmt.Fprintf(w, "  %s %-11s %s\n", c.Status.Mark(), clean(c.Name), clean(c.Detail))
		if c.Fix != "" {
			fmt.Fprintf(w, "    %-11s fix: %s\n", "", clean(c.Fix))
		}
	}
}
