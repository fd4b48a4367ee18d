package sshx

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// UnknownHostError refuses a host whose key is in no known_hosts file.
type UnknownHostError struct {
	Host        string // the alias the user gave
	Addr        string // the host:port (or HostKeyAlias) looked up
	KeyType     string // e.g. ssh-ed25519
	Fingerprint string // SHA256:...
	Trust       string // the exact way to trust it
}

func (e *UnknownHostError) Error() string {
	return fmt.Sprintf("host key for %s (%s) is not known: %s %s; to trust it run: %s",
		e.Host, e.Addr, e.KeyType, e.Fingerprint, e.Trust)
}

// KnownKey is one key that known_hosts holds for a host.
type KnownKey struct {
	KeyType     string
	Fingerprint string
	File        string
	Line        int
}

func (k KnownKey) String() string {
	return fmt.Sprintf("%s %s (%s:%d)", k.KeyType, k.Fingerprint, k.File, k.Line)
}

// HostKeyChangedError refuses a host whose key differs from every key
// known_hosts holds for it. It is raised during key exchange, before any
// authentication is attempted.
type HostKeyChangedError struct {
	Host           string
	Addr           string
	Old            []KnownKey
	NewKeyType     string
	NewFingerprint string
}

func (e *HostKeyChangedError) Error() string {
	old := make([]string, len(e.Old))
	for i, k := range e.Old {
		old[i] = k.String()
	}
	return fmt.Sprintf("host key for %s (%s) has changed: server offered %s %s, known_hosts has %s; refusing to connect (possible man-in-the-middle; if the host was re-keyed, remove the old entry and run bringup doctor --trust %s)",
		e.Host, e.Addr, e.NewKeyType, e.NewFingerprint, strings.Join(old, ", "), e.Host)
}

// RevokedHostKeyError refuses a host key marked @revoked in known_hosts.
type RevokedHostKeyError struct {
	Host        string
	Addr        string
	Fingerprint string
	File        string
	Line        int
}

func (e *RevokedHostKeyError) Error() string {
	return fmt.Sprintf("host key for %s (%s) is revoked: %s (%s:%d); refusing to connect", e.Host, e.Addr, e.Fingerprint, e.File, e.Line)
}

// HostKeyError is any other host key rejection (for example a host
// certificate not signed by a trusted @cert-authority).
type HostKeyError struct {
	Host string
	Addr string
	Err  error
}

func (e *HostKeyError) Error() string {
	return fmt.Sprintf("host key for %s (%s) rejected: %v", e.Host, e.Addr, e.Err)
}

func (e *HostKeyError) Unwrap() error { return e.Err }

// KnownHosts is a loaded set of known_hosts files.
type KnownHosts struct {
	files    []string // files that existed when loaded
	writeTo  string   // first user file: where new keys are appended
	check    ssh.HostKeyCallback
	caLines  []caLine
	dummyKey ssh.PublicKey
}

type caLine struct {
	patterns []string
}

// LoadKnownHosts reads the user and global known_hosts files that exist
// (missing ones are skipped, as ssh does). New keys go to the first user file.
func LoadKnownHosts(userFiles, globalFiles []string) (*KnownHosts, error) {
	kh := &KnownHosts{}
	if len(userFiles) > 0 {
		kh.writeTo = userFiles[0]
	}
	for _, f := range append(append([]string{}, userFiles...), globalFiles...) {
		if _, err := os.Stat(f); err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			return nil, fmt.Errorf("known_hosts %s: %w", f, err)
		}
		kh.files = append(kh.files, f)
		if err := kh.scanCA(f); err != nil {
			return nil, err
		}
	}
	cb, err := knownhosts.New(kh.files...)
	if err != nil {
		return nil, fmt.Errorf("load known_hosts: %w", err)
	}
	kh.check = cb
	pub, err := ssh.NewPublicKey(ed25519.PublicKey(make([]byte, ed25519.PublicKeySize)))
	if err != nil {
		return nil, fmt.Errorf("known_hosts probe key: %w", err)
	}
	kh.dummyKey = pub
	return kh, nil
}

// scanCA records the host patterns of @cert-authority lines, which
// knownhosts does not expose but HostKeyAlgorithms needs.
func (kh *KnownHosts) scanCA(file string) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("known_hosts %s: %w", file, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 1024*1024)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 3 && f[0] == "@cert-authority" {
			kh.caLines = append(kh.caLines, caLine{patterns: strings.Split(f[1], ",")})
		}
	}
	return sc.Err()
}

// lookupName is the name known_hosts is searched for: HostKeyAlias as is,
// otherwise host:port (knownhosts normalises port 22 away).
func lookupName(cfg Config) string {
	if cfg.HostKeyAlias != "" {
		return net.JoinHostPort(cfg.HostKeyAlias, "22")
	}
	return net.JoinHostPort(strings.ToLower(cfg.HostName), fmt.Sprint(cfg.Port))
}

// Known returns the keys known_hosts holds for the lookup name.
func (kh *KnownHosts) Known(name string) []KnownKey {
	err := kh.check(name, fixedAddr(name), kh.dummyKey)
	var ke *knownhosts.KeyError
	if !errors.As(err, &ke) {
		return nil
	}
	out := make([]KnownKey, 0, len(ke.Want))
	for _, w := range ke.Want {
		out = append(out, KnownKey{KeyType: w.Key.Type(), Fingerprint: ssh.FingerprintSHA256(w.Key), File: w.Filename, Line: w.Line})
	}
	return out
}

// HostKeyAlgorithms orders host key algorithms from what known_hosts holds
// for name, so the server presents a key type we know (golang/go#29286:
// otherwise the server may pick another type and a known host looks
// changed). Nil means the host is unknown: use the library default.
func (kh *KnownHosts) HostKeyAlgorithms(name string) []string {
	var algos []string
	seen := map[string]bool{}
	add := func(as ...string) {
		for _, a := range as {
			if !seen[a] {
				seen[a] = true
				algos = append(algos, a)
			}
		}
	}
	if kh.hasCA(name) {
		add(ssh.CertAlgoED25519v01, ssh.CertAlgoECDSA256v01, ssh.CertAlgoECDSA384v01,
			ssh.CertAlgoECDSA521v01, ssh.CertAlgoRSASHA512v01, ssh.CertAlgoRSASHA256v01)
	}
	for _, k := range kh.Known(name) {
		switch k.KeyType {
		case ssh.KeyAlgoRSA:
			add(ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256)
		default:
			add(k.KeyType)
		}
	}
	return algos
}

// hasCA reports whether an @cert-authority line matches name.
func (kh *KnownHosts) hasCA(name string) bool {
	n := knownhosts.Normalize(name)
	for _, l := range kh.caLines {
		if matchKnownHostsPatterns(l.patterns, n) {
			return true
		}
	}
	return false
}

// matchKnownHostsPatterns matches a known_hosts host field (patterns with
// '*', '?', '!' or one hashed |1|salt|hash name) against a normalised name.
func matchKnownHostsPatterns(patterns []string, name string) bool {
	if len(patterns) == 1 && strings.HasPrefix(patterns[0], "|1|") {
		parts := strings.Split(patterns[0], "|")
		if len(parts) != 4 {
			return false
		}
		salt, err1 := base64.StdEncoding.DecodeString(parts[2])
		want, err2 := base64.StdEncoding.DecodeString(parts[3])
		if err1 != nil || err2 != nil {
			return false
		}
		m := hmac.New(sha1.New, salt)
		m.Write([]byte(name))
		return hmac.Equal(m.Sum(nil), want)
	}
	return matchHost(name, patterns)
}

// fixedAddr is a net.Addr for a host:port string. Connections through a jump
// host have no useful RemoteAddr, so the checked name is always passed.
type fixedAddr string

func (a fixedAddr) Network() string { return "tcp" }
func (a fixedAddr) String() string  { return string(a) }

// hostKeyCallback returns the callback that checks cfg's host strictly and
// classifies failures. With accept-new (or no) an unknown host's key is
// appended to the first user known_hosts file; a changed key is always refused.
func (kh *KnownHosts) hostKeyCallback(cfg Config) ssh.HostKeyCallback {
	name := lookupName(cfg)
	display := cfg.Alias
	return func(_ string, _ net.Addr, key ssh.PublicKey) error {
		err := kh.check(name, fixedAddr(name), key)
		if err == nil {
			return nil
		}
		return kh.classify(cfg, display, name, key, err, cfg.StrictHostKeyChecking == "accept-new" || cfg.StrictHostKeyChecking == "no")
	}
}

// classify turns a knownhosts error into bringup's typed errors, appending
// the key on first contact when learn is set.
func (kh *KnownHosts) classify(cfg Config, display, name string, key ssh.PublicKey, err error, learn bool) error {
	shown := knownhosts.Normalize(name)
	var ke *knownhosts.KeyError
	var re *knownhosts.RevokedError
	switch {
	case errors.As(err, &re):
		return &RevokedHostKeyError{Host: display, Addr: shown, Fingerprint: ssh.FingerprintSHA256(key), File: re.Revoked.Filename, Line: re.Revoked.Line}
	case errors.As(err, &ke) && len(ke.Want) == 0:
		if learn {
			if werr := appendKnownHost(kh.writeTo, name, key); werr != nil {
				return &HostKeyError{Host: display, Addr: shown, Err: fmt.Errorf("accept-new: %w", werr)}
			}
			return nil
		}
		return &UnknownHostError{
			Host: display, Addr: shown, KeyType: key.Type(), Fingerprint: ssh.FingerprintSHA256(key),
			Trust: fmt.Sprintf("bringup doctor --trust %s (or set StrictHostKeyChecking accept-new)", display),
		}
	case errors.As(err, &ke):
		old := make([]KnownKey, 0, len(ke.Want))
		for _, w := range ke.Want {
			old = append(old, KnownKey{KeyType: w.Key.Type(), Fingerprint: ssh.FingerprintSHA256(w.Key), File: w.Filename, Line: w.Line})
		}
		return &HostKeyChangedError{Host: display, Addr: shown, Old: old, NewKeyType: key.Type(), NewFingerprint: ssh.FingerprintSHA256(key)}
	default:
		return &HostKeyError{Host: display, Addr: shown, Err: err}
	}
}

// appendKnownHost appends one plain known_hosts line for name unless the
// file meanwhile holds an entry for name (then it leaves the file alone).
// flock serialises concurrent first contacts, in this process (each open is
// its own lock holder) and across processes.
func appendKnownHost(file, name string, key ssh.PublicKey) error {
	if file == "" {
		return errors.New("no UserKnownHostsFile to write to")
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Dir(file), err)
	}
	f, err := os.OpenFile(file, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("open %s: %w", file, err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("lock %s: %w", file, err)
	}
	defer syscall.Flock(int(f.Fd()), syscall.LOCK_UN) //nolint:errcheck // closing releases it anyway
	data, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("read %s: %w", file, err)
	}
	// Another bringup may have learned the host while we waited.
	cb, err := knownhosts.New(file)
	if err == nil {
		var ke *knownhosts.KeyError
		cerr := cb(name, fixedAddr(name), key)
		if cerr == nil {
			return nil
		}
		if errors.As(cerr, &ke) && len(ke.Want) > 0 {
			return fmt.Errorf("%s gained a different key for %s meanwhile", file, knownhosts.Normalize(name))
		}
	}
	line := knownhosts.Line([]string{name}, key) + "\n"
	if len(data) > 0 && data[len(data)-1] != '\n' {
		line = "\n" + line
	}
	if _, err := f.WriteString(line); err != nil {
		return fmt.Errorf("write %s: %w", file, err)
	}
	return nil
}
