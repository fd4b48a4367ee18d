package sshx

import (
	"fmt"
	"io"
	"os"
	"sync"

	"golang.org/x/term"
)

// TerminalPassphrase asks for an identity file's passphrase on the
// terminal (standard input), prompting on w, once per file; without a
// terminal it says to use ssh-agent instead.
func TerminalPassphrase(w io.Writer) func(file string) ([]byte, error) {
	var mu sync.Mutex
	cache := map[string][]byte{}
	return func(file string) ([]byte, error) {
		mu.Lock()
		defer mu.Unlock()
		if p, ok := cache[file]; ok {
			return p, nil
		}
		fd := int(os.Stdin.Fd())
		if !term.IsTerminal(fd) {
			return nil, fmt.Errorf("%s is encrypted and there is no terminal to ask for its passphrase (load it into ssh-agent)", file)
		}
		fmt.Fprintf(w, "Passphrase for %s: ", file)
		p, err := term.ReadPassword(fd)
		fmt.Fprintln(w)
		if err != nil {
			return nil, fmt.Errorf("read passphrase for %s: %w", file, err)
		}
		cache[file] = p
		return p, nil
	}
}
