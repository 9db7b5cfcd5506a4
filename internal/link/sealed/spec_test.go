package sealed_test

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/boltmesh/boltmesh/internal/link/sealed"
	"golang.org/x/crypto/chacha20poly1305"
)

// specRecords builds, from frame/spec.md's "Sealed links" alone (not from
// this package), the dialer's first two records: "boltmesh" in a data
// record, then a key update, then "frame" under the next key.
func specRecords(t *testing.T, c sealed.Cipher) []byte {
	expand := func(prk []byte, label string, n int) []byte {
		b, err := hkdf.Expand(sha256.New, prk, label, n)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	th := sha256.Sum256(append(hello(1), hello(2)...))
	prk, err := hkdf.Extract(sha256.New, testKey, th[:])
	if err != nil {
		t.Fatal(err)
	}
	secret := expand(prk, "boltmesh seal v1 dialer", 32)
	var wire []byte
	seq := uint64(0)
	record := func(typ byte, plain string) {
		key, iv := expand(secret, "boltmesh seal v1 key", 32), expand(secret, "boltmesh seal v1 iv", 12)
		var aead cipher.AEAD
		if c == sealed.AES256GCM {
			b, _ := aes.NewCipher(key)
			aead, _ = cipher.NewGCM(b)
		} else {
			aead, _ = chacha20poly1305.New(key)
		}
		for i := range 8 {
			iv[4+i] ^= byte(seq >> (56 - 8*i))
		}
		hdr := []byte{byte(len(plain)), 0, 0, 0, typ, 0, 0, 0}
		wire = append(wire, hdr...)
		wire = aead.Seal(wire, iv, []byte(plain), hdr)
		seq++
	}
	record(0, "boltmesh")
	record(1, "")
	secret, seq = expand(secret, "boltmesh seal v1 update", 32), 0
	record(0, "frame")
	return wire
}

// TestSpec pins the record format and the key schedule: the package's
// records for fixed keys and nonces are the bytes spec.md describes, and
// these.
func TestSpec(t *testing.T) {
	pinned := map[sealed.Cipher]string{
		sealed.AES256GCM:        "0800000000000000640af29732fb00c0837be1a7f497056c0d0754209ba256980000000001000000744e485e567d5081df5cafc6b2980c3e050000000000000042c66aeb32f6d212ea1644db087cfa15687ee794dd",
		sealed.ChaCha20Poly1305: "08000000000000005216a9cf2ed286e5df984e3f475106afa6a8eb06ea9497470000000001000000593d2269f9f3e1559e4a3f1b223a5a8f050000000000000045e832f1b313c52d1ff44be6c34d61997c58e4a029",
	}
	for _, c := range ciphers {
		got := sealedBytes(t, c, sealed.Limits{Records: 1}, [][]byte{[]byte("boltmesh"), []byte("frame")})
		if want := specRecords(t, c); hex.EncodeToString(got) != hex.EncodeToString(want) {
			t.Errorf("%v: the package seals\n%x\nspec.md says\n%x", c, got, want)
		}
		if hex.EncodeToString(got) != pinned[c] {
			t.Errorf("%v: records\n%x\nwant the pinned\n%s", c, got, pinned[c])
		}
	}
}
