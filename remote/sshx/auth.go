package sshx

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"

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

// AuthError is an authentication failure of the server: every key refused,
// or the server hanging up during authentication ("Too many authentication
// failures" when it holds fewer tries than the keys offered). It is
// permanent: each retry would count as another failure against this
// machine in sshd's PerSourcePenalties.
type AuthError struct {
	Host string
	User string
	Err  error
}

func (e *AuthError) Error() string {
	return fmt.Sprintf("authentication to %s as %s failed: %v; load the right key into ssh-agent (ssh-add), or add your public key to ~%s/.ssh/authorized_keys on the host; with many keys in the agent, set IdentitiesOnly yes and an IdentityFile",
		e.Host, e.User, e.Err, e.User)
}

func (e *AuthError) Unwrap() error { return e.Err }

// agentSocket is the agent socket a dial uses: opts.AgentSocket, else
// $SSH_AUTH_SOCK read now (not at start), "" or "-" for none.
func agentSocket(opts DialOptions) string {
	if opts.AgentSocket != "" {
		return opts.AgentSocket
	}
	return os.Getenv("SSH_AUTH_SOCK")
}

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

// Identities are the identity-file keys of a host, read once (encrypted
// ones decrypted then, asking for their passphrase before a console takes
// the terminal). Agent keys are not kept: Signers asks the agent at every
// dial, so an ssh-agent that was restarted, or given other keys, is used
// on the next connection.
type Identities struct {
	identitiesOnly bool
	files          []identityKey
}

// identityKey is one IdentityFile that exists.
type identityKey struct {
	file   string
	pub    ssh.PublicKey // nil if unknown (encrypted, no .pub)
	signer ssh.Signer    // nil: encrypted, and the agent held it when loaded
}

// LoadIdentities reads cfg's identity files. An encrypted file asks
// opts.Passphrase, unless the agent holds its key now (then it is left
// encrypted and only offered through the agent).
func LoadIdentities(cfg Config, opts DialOptions) (*Identities, error) {
	agentKeys, closeAgent, err := agentSigners(agentSocket(opts))
	if err != nil {
		return nil, err
	}
	defer closeAgent()
	ids := &Identities{identitiesOnly: cfg.IdentitiesOnly}
	for _, f := range cfg.IdentityFiles {
		raw, err := os.ReadFile(f)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue // ssh skips missing identity files too
			}
			return nil, fmt.Errorf("identity file %s: %w", f, err)
		}
		k := identityKey{file: f}
		s, err := ssh.ParsePrivateKey(raw)
		var pm *ssh.PassphraseMissingError
		switch {
		case err == nil:
			k.signer, k.pub = s, s.PublicKey()
		case errors.As(err, &pm):
			k.pub = pm.PublicKey
			if k.pub == nil {
				if pubRaw, perr := os.ReadFile(f + ".pub"); perr == nil {
					if p, _, _, _, perr := ssh.ParseAuthorizedKey(pubRaw); perr == nil {
						k.pub = p
					}
				}
			}
			if holds(agentKeys, k.pub) {
				break // offered through the agent; no passphrase needed
			}
			if opts.Passphrase == nil {
				return nil, &PassphraseError{File: f, Err: errors.New("no passphrase available (bringup asks for it before the console starts; or add the key to ssh-agent)")}
			}
			pass, err := opts.Passphrase(f)
			if err != nil {
				return nil, &PassphraseError{File: f, Err: err}
			}
			if k.signer, err = ssh.ParsePrivateKeyWithPassphrase(raw, pass); err != nil {
				return nil, &PassphraseError{File: f, Err: err}
			}
			k.pub = k.signer.PublicKey()
		default:
			return nil, fmt.Errorf("identity file %s: %w", f, err)
		}
		ids.files = append(ids.files, k)
	}
	return ids, nil
}

// holds reports whether keys has p.
func holds(keys []ssh.Signer, p ssh.PublicKey) bool {
	if p == nil {
		return false
	}
	for _, a := range keys {
		if bytes.Equal(a.PublicKey().Marshal(), p.Marshal()) {
			return true
		}
	}
	return false
}

// Signers returns the keys to offer, in ssh's order: the agent's at sock
// ("" or "-" = none), asked now (only those matching an IdentityFile when
// IdentitiesOnly is set), then the identity files the agent does not hold.
// The close function releases the agent connection the agent keys sign
// through: call it once the handshake is over.
func (ids *Identities) Signers(sock string) ([]ssh.Signer, func(), error) {
	agentKeys, closeAgent, err := agentSigners(sock)
	if err != nil {
		return nil, closeAgent, err
	}
	out := []ssh.Signer{} // non-nil: "loaded, possibly none"
	for _, a := range agentKeys {
		if ids.identitiesOnly && !ids.hasFile(a.PublicKey()) {
			continue
		}
		out = append(out, a)
	}
	for _, k := range ids.files {
		if k.signer != nil && !holds(agentKeys, k.pub) {
			out = append(out, k.signer)
		}
	}
	return out, closeAgent, nil
}

// hasFile reports whether p is the key of one of the identity files.
func (ids *Identities) hasFile(p ssh.PublicKey) bool {
	for _, k := range ids.files {
		if k.pub != nil && bytes.Equal(k.pub.Marshal(), p.Marshal()) {
			return true
		}
	}
	return false
}

// LoadSigners loads cfg's identities (LoadIdentities) and returns the keys
// to offer right now (Identities.Signers with the agent of opts). A
// connection that lasts should keep the Identities instead
// (DialOptions.Identities), so that the agent is asked again at each dial.
func LoadSigners(cfg Config, opts DialOptions) ([]ssh.Signer, func(), error) {
	ids, err := LoadIdentities(cfg, opts)
	if err != nil {
		return nil, func() {}, err
	}
	return ids.Signers(agentSocket(opts))
}

// authFailure classifies an error of a handshake whose host key was
// already accepted: the server's refusal, or its hang-up, during
// authentication is an AuthError. A transport failure (a reset, a
// timeout) is left as it is: it may pass.
func authFailure(cfg Config, err error) error {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "ssh: unable to authenticate"),
		strings.Contains(msg, "no supported methods remain"),
		strings.Contains(msg, "too many authentication attempts"),
		// x/crypto turns the server's SSH_MSG_DISCONNECT into this error;
		// during authentication sshd sends one only to refuse ("Too many
		// authentication failures", "no more authentication methods").
		strings.Contains(msg, "ssh: disconnect, reason"),
		strings.Contains(msg, "Too many authentication failures"):
		return &AuthError{Host: cfg.Alias, User: cfg.User, Err: err}
	}
	return nil
}
