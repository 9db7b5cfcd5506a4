package stdnet

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net"
)

// Frame kinds.
const (
	kindHello uint32 = iota + 1
	kindMsg
	kindPut
	kindGet
	kindGetReply
	kindFence
	kindFenceAck
	kindChallenge
)

// hdrSize is the frame header: kind (4), reserved (4), length (8),
// offset or argument (8), little-endian.
const hdrSize = 24

// readBuffer is each connection's bufio.Reader size: a small frame costs
// one read syscall for header and payload together; payloads at least this
// large are read into their destination directly.
const readBuffer = 64 << 10

// maxFrame bounds an incoming payload.
const maxFrame = 1 << 32

// header is a decoded frame header.
type header struct {
	kind uint32
	n    uint64 // payload length (GET: requested length)
	arg  uint64 // offset (PUT, GET), status (FENCE_ACK, GET_REPLY), rank<<8 | channel (HELLO)
}

// conn is one TCP connection with its framing state. Writes and reads may
// run concurrently with each other, but not with themselves.
type conn struct {
	c    *net.TCPConn
	br   *bufio.Reader
	whdr [hdrSize]byte
	rhdr [hdrSize]byte
	vec  [2][]byte
	bufs net.Buffers
}

func newConn(c *net.TCPConn) *conn {
	c.SetNoDelay(true) // Go's default, made explicit
	return &conn{c: c, br: bufio.NewReaderSize(c, readBuffer)}
}

// encodeHeader writes h into b, which holds hdrSize bytes.
func encodeHeader(b []byte, h header) {
	binary.LittleEndian.PutUint32(b[0:], h.kind)
	binary.LittleEndian.PutUint32(b[4:], 0)
	binary.LittleEndian.PutUint64(b[8:], h.n)
	binary.LittleEndian.PutUint64(b[16:], h.arg)
}

// decodeHeader reads a header from b, which holds hdrSize bytes.
func decodeHeader(b []byte) header {
	return header{
		kind: binary.LittleEndian.Uint32(b[0:]),
		n:    binary.LittleEndian.Uint64(b[8:]),
		arg:  binary.LittleEndian.Uint64(b[16:]),
	}
}

// write sends one frame with a single writev of header and payload.
func (c *conn) write(h header, p []byte) error {
	encodeHeader(c.whdr[:], h)
	c.vec = [2][]byte{c.whdr[:], p}
	c.bufs = c.vec[:]
	_, err := c.bufs.WriteTo(c.c)
	c.vec[1] = nil // do not keep the caller's buffer alive
	return err
}

// readHeader reads the next frame header.
func (c *conn) readHeader() (header, error) {
	if _, err := io.ReadFull(c.br, c.rhdr[:]); err != nil {
		return header{}, err
	}
	h := decodeHeader(c.rhdr[:])
	if h.n > maxFrame {
		return h, fmt.Errorf("%w: %d-byte payload", ErrMismatch, h.n)
	}
	return h, nil
}

// expect reads the next header and checks its kind.
func (c *conn) expect(kind uint32) (header, error) {
	h, err := c.readHeader()
	if err == nil && h.kind != kind {
		err = fmt.Errorf("%w: frame kind %d, want %d", ErrMismatch, h.kind, kind)
	}
	return h, err
}

// readPayload reads n payload bytes into dst, which must hold them.
func (c *conn) readPayload(dst []byte, n uint64) error {
	if n > uint64(len(dst)) {
		return fmt.Errorf("%w: %d-byte payload for a %d-byte buffer", ErrMismatch, n, len(dst))
	}
	_, err := io.ReadFull(c.br, dst[:n])
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return err
}

// discard skips n payload bytes.
func (c *conn) discard(n uint64) error {
	_, err := c.br.Discard(int(n))
	return err
}

func (c *conn) close() error { return c.c.Close() }
