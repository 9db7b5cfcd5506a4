package stdnet

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"net"
)

// The handshake, on every connection before its first frame:
//
//	acceptor                                   dialer
//	accept  ── CHALLENGE (n = 32): nonce ──────>
//	        <── HELLO (arg = rank<<8 | channel, n = 32 or 64): nonce echoed [, MAC]
//
// With a mesh key the HELLO carries HMAC-SHA256(key, "boltmesh stdnet
// hello\x00" | nonce | arg), which the acceptor checks: a stranger cannot
// open a connection of the mesh, and a recorded HELLO answers another
// nonce. Both sides read exactly the frames' bytes (no read-ahead), so the
// connection can then carry anything, net/rpc's gob included.

// Channel says what a connection is for; its dialer names it in its HELLO.
type Channel uint8

// Channels.
const (
	ChanMsg  Channel = 0 // two-sided messages; the higher rank dials
	ChanHeap Channel = 1 // one-sided requests from the dialer to the acceptor's heap
	ChanRPC  Channel = 2 // the net/rpc baseline's calls from the dialer
)

const (
	nonceSize = 32
	macSize   = sha256.Size
)

// Greet is the dialer's side of the handshake on c: it waits for the
// acceptor's challenge and answers it as rank on channel ch, proving key
// (nil: none).
func Greet(c net.Conn, rank int, ch Channel, key []byte) error {
	var buf [hdrSize + nonceSize + macSize]byte
	if _, err := io.ReadFull(c, buf[:hdrSize+nonceSize]); err != nil {
		return fmt.Errorf("stdnet: waiting for the challenge: %w", err)
	}
	h := decodeHeader(buf[:hdrSize])
	if h.kind != kindChallenge || h.n != nonceSize {
		return fmt.Errorf("%w: frame kind %d (%d bytes) instead of the challenge", ErrHandshake, h.kind, h.n)
	}
	nonce := buf[hdrSize : hdrSize+nonceSize]
	h = header{kind: kindHello, n: nonceSize, arg: uint64(rank)<<8 | uint64(ch)}
	if len(key) > 0 {
		h.n += macSize
		copy(buf[hdrSize+nonceSize:], helloMAC(key, nonce, h.arg))
	}
	encodeHeader(buf[:hdrSize], h)
	_, err := c.Write(buf[:hdrSize+h.n])
	return err
}

// Check is the acceptor's side of the handshake on c: it sends a fresh
// challenge and checks the HELLO that answers it against key (nil: none),
// returning the dialer's rank and channel. It fails with ErrHandshake,
// ErrMeshKey or ErrReplay.
func Check(c net.Conn, key []byte) (rank int, ch Channel, err error) {
	var buf [hdrSize + nonceSize + macSize]byte
	encodeHeader(buf[:hdrSize], header{kind: kindChallenge, n: nonceSize})
	nonce := buf[hdrSize : hdrSize+nonceSize]
	rand.Read(nonce) // never fails (crypto/rand)
	sent := append([]byte(nil), nonce...)
	if _, err := c.Write(buf[:hdrSize+nonceSize]); err != nil {
		return 0, 0, err
	}
	if _, err := io.ReadFull(c, buf[:hdrSize]); err != nil {
		return 0, 0, fmt.Errorf("stdnet: waiting for the hello: %w", err)
	}
	h := decodeHeader(buf[:hdrSize])
	want := uint64(nonceSize)
	if len(key) > 0 {
		want += macSize
	}
	switch {
	case h.kind != kindHello:
		return 0, 0, fmt.Errorf("%w: frame kind %d instead of a hello", ErrHandshake, h.kind)
	case h.n != nonceSize && h.n != nonceSize+macSize:
		return 0, 0, fmt.Errorf("%w: a %d-byte hello", ErrHandshake, h.n)
	}
	if _, err := io.ReadFull(c, buf[hdrSize:hdrSize+h.n]); err != nil {
		return 0, 0, fmt.Errorf("stdnet: reading the hello: %w", err)
	}
	got := buf[hdrSize : hdrSize+nonceSize]
	switch {
	case h.n < want:
		return 0, 0, fmt.Errorf("%w: the peer has no key", ErrMeshKey)
	case h.n > want:
		return 0, 0, fmt.Errorf("%w: the peer has a key, this rank none", ErrMeshKey)
	case len(key) > 0 && !hmac.Equal(buf[hdrSize+nonceSize:hdrSize+h.n], helloMAC(key, got, h.arg)):
		return 0, 0, ErrMeshKey
	case !hmac.Equal(got, sent):
		return 0, 0, ErrReplay
	}
	return int(h.arg >> 8), Channel(h.arg & 0xff), nil
}

// helloMAC is the HELLO's proof of key for nonce and arg.
func helloMAC(key, nonce []byte, arg uint64) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("boltmesh stdnet hello\x00"))
	m.Write(nonce)
	var a [8]byte
	binary.LittleEndian.PutUint64(a[:], arg)
	m.Write(a[:])
	return m.Sum(nil)
}
