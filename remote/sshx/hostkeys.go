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
	"math"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

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
	// CertCA is the fingerprint of the CA that signed the certificate the
	// host presented, when no @cert-authority line covers the host; CertCAAt
	// lists the lines ("file:line (patterns)") that trust that CA for other
	// names.
	CertCA   string
	CertCAAt []string
	// CertNames are the names the @cert-authority patterns were matched
	// against: [host]:port, then for a host off port 22 the bare host.
	CertNames []string
}

func (e *UnknownHostError) Error() string {
	msg := fmt.Sprintf("host key for %s (%s) is not known: %s %s", e.Host, e.Addr, e.KeyType, e.Fingerprint)
	if e.CertCA != "" {
		msg += fmt.Sprintf("; it presented a host certificate signed by CA %s, but no @cert-authority line in known_hosts matches %s",
			e.CertCA, strings.Join(e.CertNames, " or "))
		if len(e.CertCAAt) > 0 {
			msg += " (that CA is trusted only for other names, at " + strings.Join(e.CertCAAt, ", ") + ")"
		}
	}
	return msg + fmt.Sprintf("; check the fingerprint on the host (ssh-keygen -lf %s), then to trust it run: %s", hostKeyFile(e.KeyType), e.Trust)
}

// hostKeyFile is where sshd keeps the public host key of a type by default.
func hostKeyFile(keyType string) string {
	switch {
	case keyType == ssh.KeyAlgoED25519:
		return "/etc/ssh/ssh_host_ed25519_key.pub"
	case strings.HasPrefix(keyType, "ecdsa-"):
		return "/etc/ssh/ssh_host_ecdsa_key.pub"
	case keyType == ssh.KeyAlgoRSA:
		return "/etc/ssh/ssh_host_rsa_key.pub"
	default:
		return "/etc/ssh/ssh_host_*_key.pub"
	}
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

// RevokedHostKeyError refuses a host key marked @revoked in known_hosts, or
// a host certificate whose signing CA (CA set) or certified key is revoked.
type RevokedHostKeyError struct {
	Host        string
	Addr        string
	CA          bool   // the revoked key is the CA that signed the host's certificate
	KeyType     string // of the revoked key
	Fingerprint string // of the revoked key
	File        string // where the @revoked line is
	Line        int
}

func (e *RevokedHostKeyError) Error() string {
	if e.CA {
		return fmt.Sprintf("host certificate for %s (%s) is signed by a revoked certificate authority: %s %s is @revoked at %s:%d; refusing to connect (the host needs a certificate from a CA that is not revoked)",
			e.Host, e.Addr, e.KeyType, e.Fingerprint, e.File, e.Line)
	}
	return fmt.Sprintf("host key for %s (%s) is revoked: %s %s is @revoked at %s:%d; refusing to connect (the host needs a new key; trust it only after checking its fingerprint on the host)",
		e.Host, e.Addr, e.KeyType, e.Fingerprint, e.File, e.Line)
}

// HostKeyError is any other host key rejection. A refused host certificate
// is a HostKeyError wrapping a *HostCertError.
type HostKeyError struct {
	Host string
	Addr string
	Err  error
}

func (e *HostKeyError) Error() string {
	return fmt.Sprintf("host key for %s (%s) rejected: %v", e.Host, e.Addr, e.Err)
}

func (e *HostKeyError) Unwrap() error { return e.Err }

// CertProblem says why a host certificate was refused.
type CertProblem string

// The reasons a host certificate is refused.
const (
	// CertUntrustedCA: no @cert-authority line for the host holds the CA
	// that signed the certificate.
	CertUntrustedCA CertProblem = "untrusted-ca"
	// CertExpired: the certificate's validity ended.
	CertExpired CertProblem = "expired"
	// CertNotYetValid: the certificate's validity has not begun.
	CertNotYetValid CertProblem = "not-yet-valid"
	// CertWrongPrincipal: the certificate does not name the host.
	CertWrongPrincipal CertProblem = "wrong-principal"
	// CertNoPrincipals: the certificate names no host at all. OpenSSH
	// takes that as valid for every host; bringup does not.
	CertNoPrincipals CertProblem = "no-principals"
	// CertCriticalOptions: the certificate carries critical options, which
	// no host certificate may (as in OpenSSH).
	CertCriticalOptions CertProblem = "critical-options"
	// CertNotHostCert: a user certificate was presented as a host key.
	CertNotHostCert CertProblem = "not-host-certificate"
	// CertInvalid: the certificate does not verify (bad signature).
	CertInvalid CertProblem = "invalid"
)

// HostCertError describes a refused host certificate: what the server
// presented, why it was refused and what known_hosts trusts for the host.
// It is wrapped in a HostKeyError that names the host.
type HostCertError struct {
	Problem       CertProblem
	Principal     string     // the name the certificate must list: HostKeyAlias, else HostName
	KeyType       string     // of the certified host key
	Fingerprint   string     // of the certified host key
	KeyID         string     // the certificate's key ID (ssh-keygen -I)
	Serial        uint64     // the certificate's serial (ssh-keygen -z)
	Principals    []string   // the names the certificate lists (ssh-keygen -n)
	ValidAfter    time.Time  // zero = from the beginning of time
	ValidBefore   time.Time  // zero = forever
	CriticalOpts  []string   // critical options the certificate carries
	CAKeyType     string     // of the CA that signed it
	CAFingerprint string     // of the CA that signed it
	Trusted       []KnownKey // the @cert-authority keys known_hosts trusts for the host
	LookupName    string     // the known_hosts name the @cert-authority patterns were matched against
	Now           time.Time  // the time the validity was checked at
	Err           error      // for CertInvalid: the verification error
}

func (e *HostCertError) Error() string {
	return fmt.Sprintf("%s; the server presented a certificate of host key %s %s (key ID %q, serial %d, principals %s, %s) signed by CA %s %s; %s",
		e.why(), e.KeyType, e.Fingerprint, e.KeyID, e.Serial, principalList(e.Principals), e.validity(),
		e.CAKeyType, e.CAFingerprint, e.fix())
}

func (e *HostCertError) Unwrap() error { return e.Err }

// why is the reason in one clause.
func (e *HostCertError) why() string {
	switch e.Problem {
	case CertUntrustedCA:
		trusted := make([]string, len(e.Trusted))
		for i, k := range e.Trusted {
			trusted[i] = k.String()
		}
		return fmt.Sprintf("host certificate is not signed by a trusted @cert-authority: its CA %s %s is not one known_hosts trusts for %s (trusted: %s)",
			e.CAKeyType, e.CAFingerprint, e.LookupName, strings.Join(trusted, ", "))
	case CertExpired:
		return fmt.Sprintf("host certificate expired at %s (now %s)", stamp(e.ValidBefore), stamp(e.Now))
	case CertNotYetValid:
		return fmt.Sprintf("host certificate is not valid until %s (now %s)", stamp(e.ValidAfter), stamp(e.Now))
	case CertWrongPrincipal:
		return fmt.Sprintf("host certificate's principals %s do not include %q, the name it is checked against (HostKeyAlias, else HostName)",
			principalList(e.Principals), e.Principal)
	case CertNoPrincipals:
		return fmt.Sprintf("host certificate lists no principals, so it does not name %q (OpenSSH would accept it for any host; bringup does not)", e.Principal)
	case CertCriticalOptions:
		return fmt.Sprintf("host certificate carries critical options %s, which host certificates must not", strings.Join(e.CriticalOpts, ", "))
	case CertNotHostCert:
		return "the server presented a user certificate as its host key"
	default:
		return fmt.Sprintf("host certificate does not verify: %v", e.Err)
	}
}

// fix says what an operator can do.
func (e *HostCertError) fix() string {
	const refuse = "refused before authentication"
	switch e.Problem {
	case CertUntrustedCA:
		return refuse + " (someone may be impersonating the host); if the host was really re-certified by another CA, check that CA's fingerprint out of band and add `@cert-authority " + e.LookupName + " <CA public key>` to known_hosts"
	case CertExpired, CertNotYetValid:
		return refuse + "; issue the host a fresh certificate (ssh-keygen -s CA -h -I ID -n " + e.Principal + " -V ...) and restart its sshd, or fix the clock that is wrong"
	case CertWrongPrincipal, CertNoPrincipals:
		return refuse + "; re-sign the host key naming it (ssh-keygen -s CA -h -I ID -n " + e.Principal + ",...) or connect by a name the certificate lists"
	default:
		return refuse + "; issue the host a new certificate"
	}
}

func (e *HostCertError) validity() string {
	if e.ValidAfter.IsZero() && e.ValidBefore.IsZero() {
		return "valid forever"
	}
	from, to := "the beginning", "forever"
	if !e.ValidAfter.IsZero() {
		from = stamp(e.ValidAfter)
	}
	if !e.ValidBefore.IsZero() {
		to = stamp(e.ValidBefore)
	}
	return "valid from " + from + " until " + to
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func principalList(p []string) string { return "[" + strings.Join(p, ",") + "]" }

// KnownHosts is a loaded set of known_hosts files.
type KnownHosts struct {
	files    []string // files that existed when loaded
	writeTo  string   // first user file: where new keys are appended
	check    ssh.HostKeyCallback
	caLines  []caLine
	dummyKey ssh.PublicKey
}

// caLine is one @cert-authority line: the CA key it trusts for its hosts.
type caLine struct {
	patterns []string
	key      ssh.PublicKey
	file     string
	line     int
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

// scanCA records the @cert-authority lines, which knownhosts does not
// expose but HostKeyAlgorithms and the certificate checks need. Lines that
// do not parse are skipped, as knownhosts and ssh skip them.
func (kh *KnownHosts) scanCA(file string) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("known_hosts %s: %w", file, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 1024*1024)
	n := 0
	for sc.Scan() {
		n++
		f := strings.Fields(sc.Text())
		if len(f) < 4 || f[0] != "@cert-authority" {
			continue
		}
		blob, err := base64.StdEncoding.DecodeString(f[3])
		if err != nil {
			continue
		}
		key, err := ssh.ParsePublicKey(blob)
		if err != nil || key.Type() != f[2] {
			continue
		}
		kh.caLines = append(kh.caLines, caLine{patterns: strings.Split(f[1], ","), key: key, file: file, line: n})
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
// changed). With an @cert-authority line for name, certificates come first
// so a server with a HostCertificate presents it. Entries under the bare
// host name count for a host off port 22 that has none under [host]:port,
// as they do when checking (see lookupNames). Nil means the host is
// unknown: use the library default.
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
	cas, _ := kh.lookupCAs(name)
	hasCA := len(cas) > 0
	if hasCA {
		add(ssh.CertAlgoED25519v01, ssh.CertAlgoECDSA256v01, ssh.CertAlgoECDSA384v01,
			ssh.CertAlgoECDSA521v01, ssh.CertAlgoRSASHA512v01, ssh.CertAlgoRSASHA256v01)
	}
	var known []KnownKey
	for _, n := range lookupNames(name) {
		if known = kh.Known(n); len(known) > 0 {
			break
		}
	}
	for _, k := range known {
		switch k.KeyType {
		case ssh.KeyAlgoRSA:
			add(ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256)
		default:
			add(k.KeyType)
		}
	}
	if hasCA && len(known) == 0 {
		// A host whose sshd has no certificate yet still gets a plain key
		// offered, so its refusal names that key instead of "no common
		// algorithm".
		add(ssh.KeyAlgoED25519, ssh.KeyAlgoECDSA256, ssh.KeyAlgoECDSA384, ssh.KeyAlgoECDSA521,
			ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256)
	}
	return algos
}

// lookupNames are the names known_hosts is searched under for the lookup
// name: name itself, then for a host off port 22 its bare host name, which
// ssh consults (read only) when nothing is known under [host]:port
// ("checking without port identifier"). A HostKeyAlias has no port.
func lookupNames(name string) []string {
	host, port, err := net.SplitHostPort(name)
	if err != nil || port == "22" {
		return []string{name}
	}
	return []string{name, net.JoinHostPort(host, "22")}
}

// lookupCAs returns the @cert-authority lines of the first lookup name of
// name that has any, and that name.
func (kh *KnownHosts) lookupCAs(name string) ([]caLine, string) {
	for _, n := range lookupNames(name) {
		if cas := kh.trustedCAs(n); len(cas) > 0 {
			return cas, n
		}
	}
	return nil, name
}

// trustedCAs returns the @cert-authority lines whose patterns match name.
func (kh *KnownHosts) trustedCAs(name string) []caLine {
	n := knownhosts.Normalize(name)
	var out []caLine
	for _, l := range kh.caLines {
		if matchKnownHostsPatterns(l.patterns, n) {
			out = append(out, l)
		}
	}
	return out
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

// LearnedHostKey is a host key that StrictHostKeyChecking accept-new (or
// no) added to known_hosts on first contact.
type LearnedHostKey struct {
	Host        string // the alias
	Addr        string // the name it was recorded under, e.g. [10.0.0.1]:2222
	KeyType     string
	Fingerprint string // SHA256:...
	File        string
	Line        int
}

func (k LearnedHostKey) String() string {
	return fmt.Sprintf("learned new host key for %s: %s %s, added to %s:%d", k.Host, k.KeyType, k.Fingerprint, k.File, k.Line)
}

// hostKeyCallback returns the callback that checks cfg's host strictly and
// classifies failures. With accept-new (or no) an unknown host's key is
// appended to the first user known_hosts file and learned (if not nil) is
// told; a changed key is always refused.
func (kh *KnownHosts) hostKeyCallback(cfg Config, learned func(LearnedHostKey)) ssh.HostKeyCallback {
	name := lookupName(cfg)
	var learn func(LearnedHostKey)
	if cfg.StrictHostKeyChecking == "accept-new" || cfg.StrictHostKeyChecking == "no" {
		learn = func(k LearnedHostKey) {
			if learned != nil {
				learned(k)
			}
		}
	}
	return func(_ string, _ net.Addr, key ssh.PublicKey) error {
		return kh.verify(cfg, name, key, learn)
	}
}

// verify checks the key a server presented for cfg's host (looked up in
// known_hosts as name): a certificate against the @cert-authority lines, a
// plain key against the host's entries. With learn set an unknown plain key
// is appended to known_hosts and learn is told where.
func (kh *KnownHosts) verify(cfg Config, name string, key ssh.PublicKey, learn func(LearnedHostKey)) error {
	if cert, ok := key.(*ssh.Certificate); ok {
		return kh.verifyCert(cfg, name, cert, learn)
	}
	err := kh.checkPlain(name, key)
	if err == nil {
		return nil
	}
	return kh.classify(cfg, name, key, err, learn)
}

// checkPlain checks a plain key under name and, when nothing at all is
// known under name, under its other lookup names, as ssh does. The error
// is the check's under name.
func (kh *KnownHosts) checkPlain(name string, key ssh.PublicKey) error {
	err := kh.check(name, fixedAddr(name), key)
	var ke *knownhosts.KeyError
	if err == nil || !errors.As(err, &ke) || len(ke.Want) > 0 {
		return err
	}
	for _, n := range lookupNames(name)[1:] {
		if kh.check(n, fixedAddr(n), key) == nil {
			return nil
		}
	}
	return err
}

// verifyCert checks a host certificate as ssh does: neither it nor its CA
// @revoked, signed by a CA an @cert-authority line trusts for the host, a
// host certificate listing the host as a principal, within its validity,
// without critical options. A failing certificate whose plain key is pinned
// for the host is accepted, as ssh does; a host no CA covers is checked by
// its plain key. Unlike ssh, a failing certificate from a host that an
// @cert-authority line covers is refused even under accept-new: known_hosts
// says that host's keys come from a CA, so a certificate from elsewhere is
// an alarm, not a first contact.
func (kh *KnownHosts) verifyCert(cfg Config, name string, cert *ssh.Certificate, learn func(LearnedHostKey)) error {
	shown := knownhosts.Normalize(name)
	for i, k := range []ssh.PublicKey{cert.SignatureKey, cert.Key} {
		var re *knownhosts.RevokedError
		if errors.As(kh.check(name, fixedAddr(name), k), &re) {
			return &RevokedHostKeyError{Host: cfg.Alias, Addr: shown, CA: i == 0, KeyType: k.Type(),
				Fingerprint: ssh.FingerprintSHA256(k), File: re.Revoked.Filename, Line: re.Revoked.Line}
		}
	}
	if cas, caName := kh.lookupCAs(name); len(cas) > 0 {
		problem := certProblem(caName, cert, cas, time.Now())
		if problem == nil || kh.checkPlain(name, cert.Key) == nil {
			return nil
		}
		return &HostKeyError{Host: cfg.Alias, Addr: shown, Err: problem}
	}
	err := kh.verify(cfg, name, cert.Key, learn)
	var uh *UnknownHostError
	if errors.As(err, &uh) {
		uh.CertCA = ssh.FingerprintSHA256(cert.SignatureKey)
		for _, n := range lookupNames(name) {
			uh.CertNames = append(uh.CertNames, knownhosts.Normalize(n))
		}
		for _, ca := range kh.caLines {
			if bytes.Equal(ca.key.Marshal(), cert.SignatureKey.Marshal()) {
				uh.CertCAAt = append(uh.CertCAAt, fmt.Sprintf("%s:%d (%s)", ca.file, ca.line, strings.Join(ca.patterns, ",")))
			}
		}
	}
	return err
}

// certProblem returns why cert is not a valid host certificate for name
// signed by one of cas at now, or nil when it is.
func certProblem(name string, cert *ssh.Certificate, cas []caLine, now time.Time) *HostCertError {
	principal, _, _ := net.SplitHostPort(name)
	e := &HostCertError{
		Principal: principal, KeyType: cert.Key.Type(), Fingerprint: ssh.FingerprintSHA256(cert.Key),
		KeyID: cert.KeyId, Serial: cert.Serial, Principals: cert.ValidPrincipals,
		CAKeyType: cert.SignatureKey.Type(), CAFingerprint: ssh.FingerprintSHA256(cert.SignatureKey),
		LookupName: knownhosts.Normalize(name), Now: now,
	}
	if cert.ValidAfter != 0 && cert.ValidAfter <= math.MaxInt64 {
		e.ValidAfter = time.Unix(int64(cert.ValidAfter), 0)
	}
	if cert.ValidBefore != ssh.CertTimeInfinity && cert.ValidBefore <= math.MaxInt64 {
		e.ValidBefore = time.Unix(int64(cert.ValidBefore), 0)
	}
	signed := false
	for _, ca := range cas {
		e.Trusted = append(e.Trusted, KnownKey{KeyType: ca.key.Type(), Fingerprint: ssh.FingerprintSHA256(ca.key), File: ca.file, Line: ca.line})
		signed = signed || bytes.Equal(ca.key.Marshal(), cert.SignatureKey.Marshal())
	}
	for opt := range cert.CriticalOptions {
		e.CriticalOpts = append(e.CriticalOpts, opt)
	}
	slices.Sort(e.CriticalOpts)
	switch {
	case cert.CertType != ssh.HostCert:
		e.Problem = CertNotHostCert
	case !signed:
		e.Problem = CertUntrustedCA
	case len(e.CriticalOpts) > 0:
		e.Problem = CertCriticalOptions
	case cert.ValidAfter > math.MaxInt64 || now.Unix() < int64(cert.ValidAfter):
		e.Problem = CertNotYetValid
	case cert.ValidBefore != ssh.CertTimeInfinity && (cert.ValidBefore > math.MaxInt64 || now.Unix() >= int64(cert.ValidBefore)):
		e.Problem = CertExpired
	case len(cert.ValidPrincipals) == 0:
		e.Problem = CertNoPrincipals
	case !slices.Contains(cert.ValidPrincipals, principal):
		e.Problem = CertWrongPrincipal
	default:
		// The library's check has the last word (it verifies the signature).
		checker := ssh.CertChecker{Clock: func() time.Time { return now }}
		if err := checker.CheckCert(principal, cert); err != nil {
			e.Problem, e.Err = CertInvalid, err
			return e
		}
		return nil
	}
	return e
}

// classify turns a knownhosts error for a plain key into bringup's typed
// errors, appending the key on first contact when learn is set.
func (kh *KnownHosts) classify(cfg Config, name string, key ssh.PublicKey, err error, learn func(LearnedHostKey)) error {
	display := cfg.Alias
	shown := knownhosts.Normalize(name)
	var ke *knownhosts.KeyError
	var re *knownhosts.RevokedError
	switch {
	case errors.As(err, &re):
		return &RevokedHostKeyError{Host: display, Addr: shown, KeyType: key.Type(), Fingerprint: ssh.FingerprintSHA256(key), File: re.Revoked.Filename, Line: re.Revoked.Line}
	case errors.As(err, &ke) && len(ke.Want) == 0:
		if learn != nil {
			line, werr := appendKnownHost(kh.writeTo, name, key, cfg.HashKnownHosts)
			if werr != nil {
				return &HostKeyError{Host: display, Addr: shown, Err: fmt.Errorf("accept-new: %w", werr)}
			}
			if line > 0 {
				learn(LearnedHostKey{Host: display, Addr: shown, KeyType: key.Type(), Fingerprint: ssh.FingerprintSHA256(key), File: kh.writeTo, Line: line})
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

// appendKnownHost appends one known_hosts line for name (its name hashed as
// |1|salt|hash when hash is set, as ssh does with HashKnownHosts) unless the
// file meanwhile holds an entry for name (then it leaves the file alone and
// returns line 0). It returns the line number it wrote. flock serialises
// concurrent first contacts, in this process (each open is its own lock
// holder) and across processes.
func appendKnownHost(file, name string, key ssh.PublicKey, hash bool) (line int, err error) {
	if file == "" {
		return 0, errors.New("no UserKnownHostsFile to write to")
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		return 0, fmt.Errorf("create %s: %w", filepath.Dir(file), err)
	}
	f, err := os.OpenFile(file, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return 0, fmt.Errorf("open %s: %w", file, err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return 0, fmt.Errorf("lock %s: %w", file, err)
	}
	defer syscall.Flock(int(f.Fd()), syscall.LOCK_UN) //nolint:errcheck // closing releases it anyway
	data, err := os.ReadFile(file)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", file, err)
	}
	// Another bringup may have learned the host while we waited.
	cb, err := knownhosts.New(file)
	if err == nil {
		var ke *knownhosts.KeyError
		cerr := cb(name, fixedAddr(name), key)
		if cerr == nil {
			return 0, nil
		}
		if errors.As(cerr, &ke) && len(ke.Want) > 0 {
			return 0, fmt.Errorf("%s gained a different key for %s meanwhile", file, knownhosts.Normalize(name))
		}
	}
	host := knownhosts.Normalize(name)
	if hash {
		host = knownhosts.HashHostname(host)
	}
	text := knownhosts.Line([]string{host}, key) + "\n"
	line = bytes.Count(data, []byte("\n")) + 1
	if len(data) > 0 && data[len(data)-1] != '\n' {
		text = "\n" + text
		line++
	}
	if _, err := f.WriteString(text); err != nil {
		return 0, fmt.Errorf("write %s: %w", file, err)
	}
	return line, nil
}
