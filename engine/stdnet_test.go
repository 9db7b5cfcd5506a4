package engine_test

// stdnet is the baseline the benchmarks compare boltmesh with: the same
// wire framing (a 32-byte frame header, then the payload) over a pair of
// connected *net.TCPConn, written the plain Go way. A send is one
// net.Buffers.WriteTo (writev) of header and payload; each connection has
// one reader goroutine that reads the header with io.ReadFull, decodes it
// with frame.Decode and reads the payload with io.ReadFull straight into the
// buffer the receiver posted, so no payload byte is copied in user space.
// Reads go through a bufio.Reader so that small frames do not cost a read
// syscall for the header and another for the payload; payloads at least as
// large as its buffer are read into the posted buffer directly.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"

	"github.com/boltmesh/boltmesh/frame"
)

// stdnetReadBuffer is the size of each connection's bufio.Reader.
const stdnetReadBuffer = 64 << 10

// stdnetMaxFrame bounds incoming payloads, like engine.Options.MaxFrame.
const stdnetMaxFrame = 1 << 30

// errStdnetClosed is returned by the operations of a closed endpoint.
var errStdnetClosed = errors.New("stdnet: endpoint closed")

// stdnetTruncatedError reports a message longer than the buffer given to
// RecvInto; the message stays pending for the next RecvInto.
type stdnetTruncatedError struct{ Len, Cap int }

func (e *stdnetTruncatedError) Error() string {
	return fmt.Sprintf("stdnet: message of %d bytes does not fit a %d-byte buffer", e.Len, e.Cap)
}

type stdnetResult struct {
	n   int
	err error
}

// stdnetEnd is one end of a stdnet connection. Send and RecvInto are safe
// for concurrent use; messages are received in the order they were sent.
type stdnetEnd struct {
	conn *net.TCPConn
	src  uint32

	wmu  sync.Mutex // serialises frames on the wire
	hdr  [frame.HeaderSize]byte
	vec  [2][]byte
	bufs net.Buffers // reused: WriteTo consumes it

	rmu     sync.Mutex        // one RecvInto at a time
	post    chan []byte       // receiver -> reader: where the next payload goes
	result  chan stdnetResult // reader -> receiver, buffered 1
	closing chan struct{}     // closed by Close
	dead    chan struct{}     // closed when the reader goroutine has exited
	rerr    error             // why the reader exited; read after dead is closed
	br      *bufio.Reader     // the reader goroutine's

	closeOnce sync.Once
	closeErr  error
	wg        sync.WaitGroup
}

func newStdnetEnd(c *net.TCPConn, src uint32) *stdnetEnd {
	e := &stdnetEnd{
		conn:    c,
		src:     src,
		post:    make(chan []byte),
		result:  make(chan stdnetResult, 1),
		closing: make(chan struct{}),
		dead:    make(chan struct{}),
		br:      bufio.NewReaderSize(c, stdnetReadBuffer),
	}
	e.wg.Go(e.readLoop)
	return e
}

// newStdnetPair connects two stdnet endpoints over 127.0.0.1 (src 0 is the
// dialing side, src 1 the accepting side) and closes both at cleanup.
func newStdnetPair(tb testing.TB) (*stdnetEnd, *stdnetEnd) {
	tb.Helper()
	ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	type accepted struct {
		c   *net.TCPConn
		err error
	}
	acc := make(chan accepted, 1)
	go func() {
		c, err := ln.AcceptTCP()
		acc <- accepted{c, err}
	}()
	dc, err := net.DialTCP("tcp", nil, ln.Addr().(*net.TCPAddr))
	if err != nil {
		ln.Close()
		if a := <-acc; a.c != nil {
			a.c.Close()
		}
		tb.Fatal(err)
	}
	a := <-acc
	if a.err != nil {
		dc.Close()
		tb.Fatal(a.err)
	}
	for _, c := range []*net.TCPConn{dc, a.c} {
		if err := c.SetNoDelay(true); err != nil { // Go's default, made explicit
			dc.Close()
			a.c.Close()
			tb.Fatal(err)
		}
	}
	e0, e1 := newStdnetEnd(dc, 0), newStdnetEnd(a.c, 1)
	tb.Cleanup(func() {
		e0.Close()
		e1.Close()
	})
	return e0, e1
}

// Send writes one frame: the header, then p. It returns once p is in the
// kernel; p may be reused right after.
func (e *stdnetEnd) Send(tag int, p []byte) error {
	if tag < 0 || int64(tag) > 1<<32-1 {
		return fmt.Errorf("stdnet: tag %d out of range", tag)
	}
	e.wmu.Lock()
	defer e.wmu.Unlock()
	h := frame.Header{Kind: frame.KindSend, Src: e.src, Tag: uint32(tag), Length: uint64(len(p))}
	h.Encode(&e.hdr)
	e.vec = [2][]byte{e.hdr[:], p}
	e.bufs = e.vec[:]
	_, err := e.bufs.WriteTo(e.conn)
	e.vec[1] = nil // do not keep the caller's buffer alive
	return err
}

// RecvInto receives the next message into dst and returns its length. A
// message longer than dst fails with a *stdnetTruncatedError and stays
// pending.
func (e *stdnetEnd) RecvInto(dst []byte) (int, error) {
	e.rmu.Lock()
	defer e.rmu.Unlock()
	select {
	case e.post <- dst:
	case <-e.dead:
		return 0, e.rerr
	}
	select {
	case r := <-e.result:
		return r.n, r.err
	case <-e.dead:
		select { // the reader may have answered before it exited
		case r := <-e.result:
			return r.n, r.err
		default:
			return 0, e.rerr
		}
	}
}

// Close closes the connection and waits for the reader goroutine to exit;
// blocked and later operations fail. It is idempotent.
func (e *stdnetEnd) Close() error {
	e.closeOnce.Do(func() {
		close(e.closing)
		e.closeErr = e.conn.Close()
		e.wg.Wait()
	})
	return e.closeErr
}

func (e *stdnetEnd) readLoop() {
	err := e.readFrames()
	select {
	case <-e.closing:
		err = errStdnetClosed
	default:
	}
	e.rerr = err
	close(e.dead)
}

// readFrames reads frames until the connection fails or is closed.
func (e *stdnetEnd) readFrames() error {
	br := e.br
	var hdr [frame.HeaderSize]byte
	for {
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			return err
		}
		h, err := frame.Decode(hdr[:], stdnetMaxFrame)
		if err != nil {
			return err
		}
		if h.Kind != frame.KindSend {
			return fmt.Errorf("stdnet: unexpected %v frame", h.Kind)
		}
		n := int(h.Length)
		for {
			var dst []byte
			select {
			case dst = <-e.post:
			case <-e.closing:
				return errStdnetClosed
			}
			if n > len(dst) {
				e.result <- stdnetResult{err: &stdnetTruncatedError{Len: n, Cap: len(dst)}}
				continue
			}
			_, err := io.ReadFull(br, dst[:n])
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			e.result <- stdnetResult{n: n, err: err}
			if err != nil {
				return err
			}
			break
		}
	}
}

func TestStdnet(t *testing.T) {
	a, b := newStdnetPair(t)

	// Both directions, empty and large messages, order kept.
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	msgs := [][]byte{[]byte("hello"), nil, big, []byte("x")}
	errc := make(chan error, 1)
	go func() {
		for _, m := range msgs {
			if err := a.Send(3, m); err != nil {
				errc <- err
				return
			}
		}
		errc <- nil
	}()
	buf := make([]byte, 2<<20)
	for i, m := range msgs {
		n, err := b.RecvInto(buf)
		if err != nil || !bytes.Equal(buf[:n], m) {
			t.Fatalf("message %d: got %d bytes, %v", i, n, err)
		}
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if err := b.Send(4, []byte("back")); err != nil {
		t.Fatal(err)
	}
	if n, err := a.RecvInto(buf); err != nil || string(buf[:n]) != "back" {
		t.Fatalf("got %q, %v", buf[:n], err)
	}

	// A message that does not fit stays pending.
	if err := a.Send(3, []byte("too long")); err != nil {
		t.Fatal(err)
	}
	var te *stdnetTruncatedError
	if _, err := b.RecvInto(buf[:3]); !errors.As(err, &te) || te.Len != 8 || te.Cap != 3 {
		t.Fatalf("short buffer: %v", err)
	}
	if n, err := b.RecvInto(buf); err != nil || string(buf[:n]) != "too long" {
		t.Fatalf("after truncation: %q, %v", buf[:n], err)
	}

	// Close fails a blocked receive on the same end and, through the
	// connection, one on the other end; both readers exit.
	done := make(chan error, 2)
	go func() { _, err := a.RecvInto(buf[:16]); done <- err }()
	go func() { _, err := b.RecvInto(make([]byte, 16)); done <- err }()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := <-done; err == nil {
			t.Fatal("receive succeeded after Close")
		}
	}
	a.Close()
	for _, e := range []*stdnetEnd{a, b} {
		select {
		case <-e.dead:
		default:
			t.Fatal("reader goroutine still running after Close")
		}
	}
	if _, err := b.RecvInto(buf); !errors.Is(err, errStdnetClosed) {
		t.Fatalf("receive on closed end: %v", err)
	}
	if err := b.Send(1, []byte("x")); err == nil {
		t.Fatal("send on closed end succeeded")
	}
}
