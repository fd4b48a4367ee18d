package sshx

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// PassphraseError says an identity file is encrypted and no passphrase was
// available (or the one given was wrong). It is permanent.
type PassphraseError struct {
	File string
	Err  error
}

func (e *PassphraseError) Error() string {
	return fmt.Sprintf("identity file %s is encrypted: %v", e.File, e.Err)
}

func (e *PassphraseError) Unwrap() error { return e.Err }

// AuthError is an authentication failure of the server; it is permanent.
type AuthError struct {
	Host string
	Err  error
}

func (e *AuthError) Error() string {
	return fmt.Sprintf("authentication to %s failed: %v", e.Host, e.Err)
}

func (e *AuthError) Unwrap() error { return e.Err }

// agentSigners connects to the agent at sock and returns its signers and a
// close function; no agent is not an error.
func agentSigners(sock string) ([]ssh.Signer, func(), error) {
	if sock == "" || sock == "-" {
		return nil, func() {}, nil
	}
	c, err := net.Dial("unix", sock)
	if err != nil {
		// A stale SSH_AUTH_SOCK should not stop key-file auth.
		return nil, func() {}, nil
	}
	signers, err := agent.NewClient(c).Signers()
	if err != nil {
		c.Close()
		return nil, func() {}, fmt.Errorf("ssh agent %s: %w", sock, err)
	}
	return signers, func() { c.Close() }, nil
}

// LoadSigners builds the public-key signers for cfg in ssh's order: agent
// keys first (only those matching an IdentityFile when IdentitiesOnly is
// set), then the identity files that exist and are not already in the agent.
// An encrypted file asks opts.Passphrase; the command layer calls this before
// the TUI starts and passes the result as DialOptions.Signers. The returned
// close function releases the agent connection.
func LoadSigners(cfg Config, opts DialOptions) ([]ssh.Signer, func(), error) {
	sock := opts.AgentSocket
	if sock == "" {
		sock = os.Getenv("SSH_AUTH_SOCK")
	}
	agentKeys, closeAgent, err := agentSigners(sock)
	if err != nil {
		return nil, closeAgent, err
	}
	type fileKey struct {
		file   string
		pub    ssh.PublicKey // nil if unknown until decrypted
		signer ssh.Signer
		raw    []byte
	}
	var files []fileKey
	for _, f := range cfg.IdentityFiles {
		raw, err := os.ReadFile(f)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue // ssh skips missing identity files too
			}
			closeAgent()
			return nil, func() {}, fmt.Errorf("identity file %s: %w", f, err)
		}
		fk := fileKey{file: f, raw: raw}
		s, err := ssh.ParsePrivateKey(raw)
		var pm *ssh.PassphraseMissingError
		switch {
		case err == nil:
			fk.signer, fk.pub = s, s.PublicKey()
		case errors.As(err, &pm):
			fk.pub = pm.PublicKey
			if fk.pub == nil {
				if pubRaw, perr := os.ReadFile(f + ".pub"); perr == nil {
					if p, _, _, _, perr := ssh.ParseAuthorizedKey(pubRaw); perr == nil {
						fk.pub = p
					}
				}
			}
		default:
			closeAgent()
			return nil, func() {}, fmt.Errorf("identity file %s: %w", f, err)
		}
		files = append(files, fk)
	}
	out := []ssh.Signer{} // non-nil: "loaded, possibly none"
	inAgent := func(p ssh.PublicKey) bool {
		if p == nil {
			return false
		}
		for _, a := range agentKeys {
			if bytes.Equal(a.PublicKey().Marshal(), p.Marshal()) {
				return true
			}
		}
		return false
	}
	for _, a := range agentKeys {
		if cfg.IdentitiesOnly {
			ok := false
			for _, fk := range files {
				if fk.pub != nil && bytes.Equal(fk.pub.Marshal(), a.PublicKey().Marshal()) {
					ok = true
				}
			}
			if !ok {
				continue
			}
		}
		out = append(out, a)
	}
	for _, fk := range files {
		if inAgent(fk.pub) {
			continue
		}
		if fk.signer == nil {
			if opts.Passphrase == nil {
				closeAgent()
				return nil, func() {}, &PassphraseError{File: fk.file, Err: errors.New("no passphrase available (bringup asks for it before the console starts; or add the key to ssh-agent)")}
			}
			pass, err := opts.Passphrase(fk.file)
			if err != nil {
				closeAgent()
				return nil, func() {}, &PassphraseError{File: fk.file, Err: err}
			}
			s, err := ssh.ParsePrivateKeyWithPassphrase(fk.raw, pass)
			if err != nil {
				closeAgent()
				return nil, func() {}, &PassphraseError{File: fk.file, Err: err}
			}
			fk.signer = s
		}
		out = append(out, fk.signer)
	}
	return out, closeAgent, nil
}
