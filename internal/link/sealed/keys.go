package sealed

import (
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/binary"
)

// SecretSize is the length of a direction's traffic secret, and of the
// keys the ciphers take.
const SecretSize = 32

// NonceSize is the length of the ciphers' nonces.
const NonceSize = 12

// The HKDF labels of the key schedule (frame/spec.md, "Sealed links").
const (
	labelDialer   = "boltmesh seal v1 dialer"   // the dialer's direction's first secret
	labelAcceptor = "boltmesh seal v1 acceptor" // the acceptor's
	labelKey      = "boltmesh seal v1 key"      // a secret's key
	labelIV       = "boltmesh seal v1 iv"       // a secret's nonce mask
	labelUpdate   = "boltmesh seal v1 update"   // the secret after a key update
)

// Keys are the first traffic secrets of one link, as seen from one end:
// what it seals with (Send) and what it opens with (Recv).
type Keys struct {
	Cipher     Cipher
	Send, Recv [SecretSize]byte
}

// Derive makes the keys of a link sealed with c whose handshake exchanged
// the HELLO payloads dialerHello and acceptorHello, as sent, under the
// mesh key, for each end: HKDF-Extract with SHA-256 of meshKey, salted
// with the SHA-256 of both HELLOs in that order (which hold both nonces,
// the ciphers preferred and whether each end asked for a seal), expanded
// once per direction.
func Derive(c Cipher, meshKey, dialerHello, acceptorHello []byte) (dialer, acceptor Keys, err error) {
	h := sha256.New()
	h.Write(dialerHello)
	h.Write(acceptorHello)
	prk, err := hkdf.Extract(sha256.New, meshKey, h.Sum(nil))
	if err != nil {
		return Keys{}, Keys{}, err
	}
	var d2a, a2d [SecretSize]byte
	if err := expand(d2a[:], prk, labelDialer); err != nil {
		return Keys{}, Keys{}, err
	}
	if err := expand(a2d[:], prk, labelAcceptor); err != nil {
		return Keys{}, Keys{}, err
	}
	return Keys{Cipher: c, Send: d2a, Recv: a2d}, Keys{Cipher: c, Send: a2d, Recv: d2a}, nil
}

func expand(dst, prk []byte, label string) error {
	b, err := hkdf.Expand(sha256.New, prk, label, len(dst))
	copy(dst, b)
	return err
}

// direction is one direction's sealing state: the current key's AEAD, its
// nonce mask, and how much it has sealed (or opened).
type direction struct {
	cipher  Cipher
	aead    cipher.AEAD
	secret  [SecretSize]byte
	iv      [NonceSize]byte
	nonce   [NonceSize]byte // the next record's, rebuilt by next
	records uint64          // records under this key
	bytes   uint64          // plaintext bytes under this key
	gen     uint32          // key updates so far
}

// init keys d with its first secret.
func (d *direction) init(c Cipher, secret [SecretSize]byte) error {
	d.cipher, d.secret = c, secret
	return d.rekey()
}

// rekey derives the key and nonce mask of d.secret and starts counting
// again.
func (d *direction) rekey() error {
	var key [SecretSize]byte
	if err := expand(key[:], d.secret[:], labelKey); err != nil {
		return err
	}
	if err := expand(d.iv[:], d.secret[:], labelIV); err != nil {
		return err
	}
	aead, err := newAEAD(d.cipher, key[:])
	if err != nil {
		return err
	}
	d.aead, d.records, d.bytes = aead, 0, 0
	return nil
}

// update moves d to the next secret (a key update).
func (d *direction) update() error {
	if err := expand(d.secret[:], d.secret[:], labelUpdate); err != nil {
		return err
	}
	d.gen++
	return d.rekey()
}

// next returns the nonce of the next record, the nonce mask XOR the
// record's number under the key (big-endian in the last 8 bytes), and
// counts the record.
func (d *direction) next(n int) []byte {
	d.nonce = d.iv
	var seq [8]byte
	binary.BigEndian.PutUint64(seq[:], d.records)
	for i, b := range seq {
		d.nonce[NonceSize-8+i] ^= b
	}
	d.records++
	d.bytes += uint64(n)
	return d.nonce[:]
}
