package stdnet

import (
	"context"
	"errors"
	"fmt"
	"runtime/pprof"
	"sync"
)

// heapMem is a rank's heap: read and written by its heap servers and its
// owner, under mu.
type heapMem struct {
	mu sync.Mutex
	b  []byte
}

// Fence acknowledgement statuses.
const (
	fenceOK      = 0
	fenceRefused = 1 // a put since the last fence was out of bounds
)

// Grow makes this rank's heap at least size bytes. It is how a region is
// allocated: every rank grows its heap alike, and regions start at offset
// 0.
func (m *Mesh) Grow(size int) {
	m.heap.mu.Lock()
	defer m.heap.mu.Unlock()
	if len(m.heap.b) < size {
		m.heap.b = append(m.heap.b, make([]byte, size-len(m.heap.b))...)
	}
}

// Load copies this rank's heap at off into dst.
func (m *Mesh) Load(off int, dst []byte) error {
	return m.local(off, len(dst), func(h []byte) { copy(dst, h) })
}

// Store copies src into this rank's heap at off.
func (m *Mesh) Store(off int, src []byte) error {
	return m.local(off, len(src), func(h []byte) { copy(h, src) })
}

func (m *Mesh) local(off, n int, f func([]byte)) error {
	m.heap.mu.Lock()
	defer m.heap.mu.Unlock()
	if off < 0 || n < 0 || off+n > len(m.heap.b) {
		return fmt.Errorf("%w: %d bytes at %d of a %d-byte heap", ErrOutOfBounds, n, off, len(m.heap.b))
	}
	f(m.heap.b[off : off+n])
	return nil
}

// Put writes src into rank to's heap at off. It returns once src is in the
// kernel; the bytes are visible at the target after Quiet.
func (m *Mesh) Put(to, off int, src []byte) error {
	c, err := m.peer(m.cli, to)
	if err == nil {
		err = c.write(header{kind: kindPut, n: uint64(len(src)), arg: uint64(off)}, src)
	}
	if err != nil {
		return fmt.Errorf("stdnet: put to rank %d: %w", to, err)
	}
	m.dirty[to] = true
	return nil
}

// Get reads len(dst) bytes at off from rank from's heap into dst.
func (m *Mesh) Get(from, off int, dst []byte) error {
	c, err := m.peer(m.cli, from)
	if err == nil {
		err = c.write(header{kind: kindGet, n: uint64(len(dst)), arg: uint64(off)}, nil)
	}
	var h header
	if err == nil {
		h, err = c.expect(kindGetReply)
	}
	if err == nil && h.arg != 0 {
		err = c.discard(h.n)
		err = errors.Join(fmt.Errorf("%w: %d bytes at %d", ErrOutOfBounds, len(dst), off), err)
	}
	if err == nil {
		err = c.readPayload(dst, h.n)
	}
	if err != nil {
		return fmt.Errorf("stdnet: get from rank %d: %w", from, err)
	}
	return nil
}

// Quiet returns when every put this rank issued has been written into its
// target's heap: a FENCE to each target put to since the last Quiet, whose
// acknowledgement follows the puts on the same connection.
func (m *Mesh) Quiet() error {
	var errs []error
	for r, d := range m.dirty {
		if d {
			errs = append(errs, m.fence(r))
			m.dirty[r] = false
		}
	}
	return errors.Join(errs...)
}

func (m *Mesh) fence(r int) error {
	c, err := m.peer(m.cli, r)
	if err == nil {
		err = c.write(header{kind: kindFence}, nil)
	}
	var h header
	if err == nil {
		h, err = c.expect(kindFenceAck)
	}
	if err == nil && h.arg == fenceRefused {
		err = fmt.Errorf("%w: a put was refused", ErrOutOfBounds)
	}
	if err != nil {
		return fmt.Errorf("stdnet: quiet rank %d: %w", r, err)
	}
	return nil
}

// startServers starts one goroutine per peer answering its heap requests.
func (m *Mesh) startServers() {
	for r, c := range m.srv {
		if c != nil {
			m.wg.Go(func() {
				labels := pprof.Labels("op", "stdnet-heap-server", "impl", "stdnet")
				pprof.Do(context.Background(), labels, func(context.Context) { m.serve(r, c) })
			})
		}
	}
}

// serve answers one peer's requests until its connection closes.
func (m *Mesh) serve(r int, c *conn) {
	refused := false
	for {
		h, err := c.readHeader()
		if err == nil {
			err = m.answer(c, h, &refused)
		}
		if err != nil {
			c.close() // the peer sees its requests fail
			return
		}
	}
}

// answer handles one request.
func (m *Mesh) answer(c *conn, h header, refused *bool) error {
	switch h.kind {
	case kindPut:
		return m.servePut(c, h, refused)
	case kindGet:
		return m.serveGet(c, h)
	case kindFence:
		status := uint64(fenceOK)
		if *refused {
			status, *refused = fenceRefused, false
		}
		return c.write(header{kind: kindFenceAck, arg: status}, nil)
	}
	return fmt.Errorf("%w: request kind %d", ErrMismatch, h.kind)
}

// servePut reads a put's payload straight into the heap, or skips it if it
// does not fit.
func (m *Mesh) servePut(c *conn, h header, refused *bool) error {
	m.heap.mu.Lock()
	defer m.heap.mu.Unlock()
	if h.arg > uint64(len(m.heap.b)) || h.n > uint64(len(m.heap.b))-h.arg {
		*refused = true
		return c.discard(h.n)
	}
	return c.readPayload(m.heap.b[h.arg:], h.n)
}

// serveGet writes the requested heap bytes back with one writev.
func (m *Mesh) serveGet(c *conn, h header) error {
	m.heap.mu.Lock()
	defer m.heap.mu.Unlock()
	if h.arg > uint64(len(m.heap.b)) || h.n > uint64(len(m.heap.b))-h.arg {
		return c.write(header{kind: kindGetReply, arg: 1}, nil)
	}
	return c.write(header{kind: kindGetReply, n: h.n}, m.heap.b[h.arg:h.arg+h.n])
}
