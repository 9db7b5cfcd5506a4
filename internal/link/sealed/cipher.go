package sealed

import (
	"crypto/aes"
	"crypto/cipher"
	"fmt"

	"golang.org/x/crypto/chacha20poly1305"
	"golang.org/x/sys/cpu"
)

// Cipher is an AEAD a pair of ranks seals with; its value is the one
// HELLO carries (frame/spec.md, "Sealed links").
type Cipher uint8

// The ciphers. Both take 32-byte keys and 12-byte nonces.
const (
	AES256GCM        Cipher = 1 // AES-256 in Galois/Counter Mode
	ChaCha20Poly1305 Cipher = 2 // RFC 8439
)

func (c Cipher) String() string {
	switch c {
	case AES256GCM:
		return "aes-256-gcm"
	case ChaCha20Poly1305:
		return "chacha20-poly1305"
	}
	return fmt.Sprintf("cipher(%d)", uint8(c))
}

// hasAES reports whether this CPU has the AES and carry-less multiply
// instructions AES-GCM needs to be fast (and constant-time).
var hasAES = cpu.X86.HasAES && cpu.X86.HasPCLMULQDQ || cpu.ARM64.HasAES && cpu.ARM64.HasPMULL

// Preferred is the cipher this machine seals fastest: AES-256-GCM where
// the CPU has AES instructions, ChaCha20-Poly1305 (about 6x faster where
// it has none) otherwise.
func Preferred() Cipher {
	if hasAES {
		return AES256GCM
	}
	return ChaCha20Poly1305
}

// Agree is the cipher of a pair whose ends prefer a and b: AES-256-GCM
// only if both do, since an end without AES instructions is the one the
// pair waits for.
func Agree(a, b Cipher) Cipher {
	if a == AES256GCM && b == AES256GCM {
		return AES256GCM
	}
	return ChaCha20Poly1305
}

// newAEAD returns c keyed with key.
func newAEAD(c Cipher, key []byte) (cipher.AEAD, error) {
	switch c {
	case AES256GCM:
		b, err := aes.NewCipher(key)
		if err != nil {
			return nil, err
		}
		return cipher.NewGCM(b)
	case ChaCha20Poly1305:
		return chacha20poly1305.New(key)
	}
	return nil, fmt.Errorf("sealed: unknown cipher %d", uint8(c))
}
