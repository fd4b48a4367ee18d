package cli

import (
	"os"

	"golang.org/x/term"
)

// IsTerminal reports whether v (a reader or writer) is a terminal.
func IsTerminal(v any) bool {
	f, ok := v.(*os.File)
	return ok && f != nil && term.IsTerminal(int(f.Fd()))
}
