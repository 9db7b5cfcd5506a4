package engine_test

import (
	"encoding/binary"
	"io"
	"net"
	"sync"
	"testing"

	"github.com/boltmesh/boltmesh/frame"
	"github.com/boltmesh/boltmesh/internal/link/sealed"
)

// relay is an on-path attacker between dialers and the rank listening
// at target, for the sealed-link tests: it forwards every connection it
// accepts, frame by frame through the handshake (hello may rewrite each
// HELLO) and then record by record (record may drop, replay, reorder
// or alter them), and can record what passed.
type relay struct {
	ln     net.Listener
	target string
	// hello, if set, may rewrite a HELLO payload on its way; toAcceptor
	// says its direction.
	hello func(toAcceptor bool, payload []byte)
	// record, if set, returns what to forward in place of rec, a sealed
	// record from the dialer of rank, stream (toAcceptor) or to it; nil
	// drops it, and a nil element closes the connection there (a cut).
	// It is called from one goroutine per direction.
	record func(rank, stream int, toAcceptor bool, rec []byte) [][]byte
	// plain says the connections are not sealed: after the handshake
	// the relay forwards bytes as they come.
	plain bool

	mu   sync.Mutex
	seen []byte // every byte that passed, in both directions
	wg   sync.WaitGroup
}

// newRelay starts a relay to target configured by setup (if not nil)
// before it accepts anything, and closes it at cleanup.
func newRelay(t testing.TB, target string, setup func(*relay)) *relay {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &relay{ln: ln, target: target}
	if setup != nil {
		setup(r)
	}
	t.Cleanup(func() { ln.Close(); r.wg.Wait() })
	r.wg.Go(r.accept)
	return r
}

func (r *relay) addr() string { return r.ln.Addr().String() }

func (r *relay) accept() {
	for {
		in, err := r.ln.Accept()
		if err != nil {
			return
		}
		out, err := net.Dial("tcp", r.target)
		if err != nil {
			in.Close()
			continue
		}
		c := &relayed{named: make(chan struct{})}
		r.wg.Go(func() { r.pipe(in, out, true, c) })
		r.wg.Go(func() { <-c.named; r.pipe(out, in, false, c) })
	}
}

// relayed is one relayed connection: the rank and stream its dialer's
// HELLO names, known once named is closed.
type relayed struct {
	rank, stream int
	named        chan struct{}
	once         sync.Once
}

// done marks the dialer's HELLO read (or never to come).
func (c *relayed) done() { c.once.Do(func() { close(c.named) }) }

// pipe forwards src to dst: two handshake frames, then records.
func (r *relay) pipe(src, dst net.Conn, toAcceptor bool, c *relayed) {
	defer c.done()
	cut := false // a record edit ended the stream (a nil buffer)
	defer func() {
		// A cut ends dst's way with a FIN after what was forwarded, and
		// leaves dst open for the other way's pipe, which closes it: a
		// close now, with that way's bytes unread, would send a reset,
		// which may discard the forwarded bytes before they are read.
		// The FIN goes before src is closed, so that dst sees the cut
		// before src's end can make the peer behind it close its other
		// streams (whose clean ends dst would otherwise see first when
		// this goroutine is slow to run).
		if tc, ok := dst.(*net.TCPConn); cut && ok {
			tc.CloseWrite()
			src.Close()
			return
		}
		src.Close()
		dst.Close()
	}()
	for i := range 2 {
		var hdr [frame.HeaderSize]byte
		if _, err := io.ReadFull(src, hdr[:]); err != nil {
			return
		}
		h, err := frame.Decode(hdr[:], frame.MaxReasonSize)
		if err != nil {
			return
		}
		payload := make([]byte, h.Length)
		if _, err := io.ReadFull(src, payload); err != nil {
			return
		}
		if i == 0 && h.Kind == frame.KindHello {
			if toAcceptor {
				c.rank, c.stream = int(binary.LittleEndian.Uint32(payload[16:])), int(binary.LittleEndian.Uint16(payload[20:]))
				c.done()
			}
			if r.hello != nil {
				r.hello(toAcceptor, payload)
			}
		}
		r.forward(dst, hdr[:], payload)
	}
	c.done()
	for r.plain {
		b := make([]byte, 64<<10)
		n, err := src.Read(b)
		if err != nil || !r.forward(dst, b[:n]) {
			return
		}
	}
	for {
		var hdr [sealed.HeaderSize]byte
		if _, err := io.ReadFull(src, hdr[:]); err != nil {
			return
		}
		rec := make([]byte, sealed.HeaderSize+int(binary.LittleEndian.Uint32(hdr[:]))+sealed.TagSize)
		copy(rec, hdr[:])
		if _, err := io.ReadFull(src, rec[sealed.HeaderSize:]); err != nil {
			return
		}
		out := [][]byte{rec}
		if r.record != nil {
			out = r.record(c.rank, c.stream, toAcceptor, rec)
		}
		if !r.forward(dst, out...) {
			cut = len(out) > 0 && out[len(out)-1] == nil
			return
		}
	}
}

func (r *relay) forward(dst net.Conn, bufs ...[]byte) bool {
	for _, b := range bufs {
		if b == nil {
			return false
		}
		r.mu.Lock()
		r.seen = append(r.seen, b...)
		r.mu.Unlock()
		if _, err := dst.Write(b); err != nil {
			return false
		}
	}
	return true
}

// passed returns a copy of every byte that went through.
func (r *relay) passed() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]byte(nil), r.seen...)
}
