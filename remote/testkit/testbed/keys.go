package testbed

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"

	"golang.org/x/crypto/ssh"
)

// keyPair is an ed25519 key in the two text forms OpenSSH reads: the
// private key file and the one-line public key.
type keyPair struct {
	Private []byte // OpenSSH PEM ("BEGIN OPENSSH PRIVATE KEY")
	Public  []byte // authorized_keys line, ending in a newline
	Signer  ssh.Signer
}

// newKeyPair makes a fresh ed25519 key. Keys are made in Go rather than by
// ssh-keygen so that every host of every run has its own, with no tool
// needed on the machine and no prompt to answer.
func newKeyPair(comment string) (keyPair, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return keyPair{}, fmt.Errorf("generate ed25519 key: %w", err)
	}
	block, err := ssh.MarshalPrivateKey(priv, comment)
	if err != nil {
		return keyPair{}, fmt.Errorf("marshal private key: %w", err)
	}
	sshPub, err := ssh.NewPublicKey(pub)
	if err != nil {
		return keyPair{}, fmt.Errorf("convert public key: %w", err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		return keyPair{}, fmt.Errorf("make signer: %w", err)
	}
	line := ssh.MarshalAuthorizedKey(sshPub) // ends in "\n"
	if comment != "" {
		line = append(line[:len(line)-1], []byte(" "+comment+"\n")...)
	}
	return keyPair{Private: pem.EncodeToMemory(block), Public: line, Signer: signer}, nil
}
