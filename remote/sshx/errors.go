package sshx

import (
	"errors"
	"strings"
)

// ErrNotConnected is returned (wrapped with the host name) by Conn helpers
// while the host's connection is down.
var ErrNotConnected = errors.New("not connected")

// IsPermanent reports whether err must not be retried automatically: host
// key refusals (unknown, changed, revoked, untrusted certificate),
// authentication failures, unusable identity files and configuration errors.
// Retrying these would hammer a possibly hostile host, trip sshd's
// PerSourcePenalties, or just repeat the same refusal.
func IsPermanent(err error) bool {
	if err == nil {
		return false
	}
	var (
		uh *UnknownHostError
		ch *HostKeyChangedError
		rv *RevokedHostKeyError
		hk *HostKeyError
		ae *AuthError
		pe *PassphraseError
		ce *ConfigError
	)
	switch {
	case errors.As(err, &uh), errors.As(err, &ch), errors.As(err, &rv), errors.As(err, &hk),
		errors.As(err, &ae), errors.As(err, &pe), errors.As(err, &ce):
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, "ssh: unable to authenticate") ||
		strings.Contains(msg, "no supported methods remain") ||
		strings.Contains(msg, "no common algorithm for host key")
}

// ShellQuote quotes s as one word for the remote POSIX shell that runs
// every command sent over an exec channel.
func ShellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
