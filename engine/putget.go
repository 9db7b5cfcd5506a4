package engine

import (
	"errors"

	"github.com/boltmesh/boltmesh/frame"
	"github.com/boltmesh/boltmesh/heap"
	linkshm "github.com/boltmesh/boltmesh/internal/link/shm"
	"github.com/boltmesh/boltmesh/ioloop"
)

// checkHeap validates a one-sided transfer of n bytes against b before
// anything goes on the wire.
func (t *NetTransport) checkHeap(b SymmetricBuffer, n int) error {
	if err := t.checkRank(b.Rank); err != nil {
		return err
	}
	if uint64(n) != b.Len {
		return &LengthMismatchError{Expected: b.Len, Got: uint64(n)}
	}
	if size := t.heap.Size(); b.Offset > size || b.Len > size-b.Offset {
		return &OutOfBoundsError{Rank: b.Rank, Offset: b.Offset, Len: b.Len, HeapSize: size}
	}
	if b.Len > t.opts.MaxFrame {
		return &OutOfBoundsError{Rank: b.Rank, Offset: b.Offset, Len: b.Len, HeapSize: t.opts.MaxFrame}
	}
	return nil
}

// local returns this rank's heap range for b, already bounds-checked.
func (t *NetTransport) local(b SymmetricBuffer) ([]byte, error) {
	s, err := t.heap.Slice(b.Offset, b.Len)
	if err != nil {
		return nil, &PeerError{Op: "heap", Rank: t.rank, Err: ErrClosed, Cause: err}
	}
	return s, nil
}

// mappedOp runs a one-sided operation on a neighbour's mapped heap: a
// copy, with no frame and nothing asked of the neighbour, refused as over
// TCP if the neighbour is lost or the range is outside its heap.
//
// Memory ordering. A Put to a neighbour is complete when it returns: its
// bytes are plain stores into memory the neighbour maps, so Quiet has
// nothing to wait for. Every frame this rank sends afterwards, to anyone,
// is published after those stores: through a pipe by an atomic store of
// its tail (a release, read with an acquire by the receiver), over TCP by
// a system call. A Barrier is such frames, or between neighbours signals
// swapped into their mailbox (a locked exchange, a full barrier after the
// puts, loaded by the other side: barrier_mail.go), and each rank leaves
// it only after receiving some, so every put issued before a barrier by
// any rank is visible after it on every rank, through the neighbours' mappings or
// through Get over TCP; a Get is a copy that sees what the last barrier
// made visible, and bytes put concurrently with it may or may not be
// seen, in part, as over TCP. The race detector cannot check any of this
// (it does not watch memory outside Go's heap); the tests check it by
// content.
func (t *NetTransport) mappedOp(p *peer, m *linkshm.MappedHeap, b SymmetricBuffer, buf []byte, put bool) error {
	op := "get"
	if put {
		op = "put"
	}
	if err := p.lostErr(op); err != nil {
		return err
	}
	err := m.CopyAt(b.Offset, buf, put)
	if err == nil {
		return nil
	}
	return mappedErr(p, op, b, err)
}

// mappedErr is the error of a refused copy to or from a neighbour's
// heap (kept out of mappedOp, whose success allocates nothing).
func mappedErr(p *peer, op string, b SymmetricBuffer, err error) error {
	var re *heap.RangeError
	if errors.As(err, &re) {
		return &OutOfBoundsError{Rank: b.Rank, Offset: b.Offset, Len: b.Len, HeapSize: re.Size}
	}
	return &PeerError{Op: op, Rank: p.rank, Err: ErrClosed, Cause: err}
}

// Put implements SymmetricTransport.
func (t *NetTransport) Put(dst SymmetricBuffer, src []byte) error {
	r, err := t.PutNB(dst, src)
	if err != nil {
		return err
	}
	return r.Wait()
}

// PutNB implements SymmetricTransport. The payload goes out with writev
// straight from src and is read at the target straight into its heap.
func (t *NetTransport) PutNB(dst SymmetricBuffer, src []byte) (Request, error) {
	if err := t.checkHeap(dst, len(src)); err != nil {
		return Request{}, err
	}
	p := t.peer(dst.Rank)
	if m := p.can().heap; m != nil {
		return Request{}, t.mappedOp(p, m, dst, src, true)
	}
	if !p.up() {
		h, err := t.local(dst)
		if err == nil {
			copy(h, src)
		}
		return Request{}, err
	}
	h := frame.Header{Kind: frame.KindPut, Src: uint32(t.rank), Offset: dst.Offset}
	w, err := p.link.start(laneCtl, h, src)
	if err != nil {
		return Request{}, t.connErr(p, "put", err)
	}
	p.one.putSent() // after the frame is queued: a fence sent later covers it
	return Request{t: t, p: p, w: w, op: "put", wait: true}, nil
}

// Get implements SymmetricTransport.
func (t *NetTransport) Get(src SymmetricBuffer, dst []byte) error {
	r, err := t.GetNB(src, dst)
	if err != nil {
		return err
	}
	return r.Wait()
}

// GetNB implements SymmetricTransport. The request carries an id that the
// reply echoes, so concurrent gets to one peer each receive their own
// bytes; the reply is read straight into dst.
func (t *NetTransport) GetNB(src SymmetricBuffer, dst []byte) (Request, error) {
	if err := t.checkHeap(src, len(dst)); err != nil {
		return Request{}, err
	}
	p := t.peer(src.Rank)
	if m := p.can().heap; m != nil {
		return Request{}, t.mappedOp(p, m, src, dst, false)
	}
	if !p.up() {
		h, err := t.local(src)
		if err == nil {
			copy(dst, h)
		}
		return Request{}, err
	}
	g, err := t.startGet(p, src.Offset, dst)
	if err != nil {
		return Request{}, err
	}
	return Request{t: t, p: p, g: g, op: "get"}, nil
}

// startGet registers a pending get and sends its request.
func (t *NetTransport) startGet(p *peer, off uint64, dst []byte) (*getReq, error) {
	g := t.pools.gets.Get().(*getReq)
	g.dst, g.id = dst, t.pools.nextID.Add(1)
	if err := p.addGet(g); err != nil {
		t.pools.gets.Put(g)
		return nil, err
	}
	(&frame.GetReq{ID: g.id, Length: uint64(len(dst))}).Encode(&g.req)
	h := frame.Header{Kind: frame.KindGetReq, Src: uint32(t.rank), Offset: off}
	if err := p.link.send(laneCtl, h, g.req[:], nil); err != nil {
		if p.removeGet(g) {
			t.pools.gets.Put(g)
		} else {
			t.waitGet(p, g) // the peer's loss completes it
		}
		return nil, t.connErr(p, "get", err)
	}
	return g, nil
}

// waitGet waits for g's reply, reading the socket itself first as a
// receive does, and recycles g.
func (t *NetTransport) waitGet(p *peer, g *getReq) error {
	t.spin(p, &g.state, laneCtl)
	<-g.done
	err := g.err
	g.reset()
	t.pools.gets.Put(g)
	return err
}

// waitGetCancel is waitGet that stops waiting when cancel is closed: a
// get whose reply has not begun to arrive is withdrawn (its reply, when
// it comes, is discarded unread) and it returns ioloop.ErrCanceled; one
// whose reply is being read is waited for.
func (t *NetTransport) waitGetCancel(p *peer, g *getReq, cancel <-chan struct{}) error {
	t.spin(p, &g.state, laneCtl)
	select {
	case <-g.done:
	case <-cancel:
		if p.removeGet(g) {
			g.reset()
			t.pools.gets.Put(g)
			return ioloop.ErrCanceled
		}
		<-g.done
	}
	err := g.err
	g.reset()
	t.pools.gets.Put(g)
	return err
}

// Quiet implements SymmetricTransport: a zero-length get to every peer
// with puts not yet covered by a completed fence is a fence, since each
// connection is processed in order, and a refusal of an earlier put
// reaches this rank before the fence's reply. Concurrent Quiets each wait
// for a fence that covers the puts issued before they began.
func (t *NetTransport) Quiet() error {
	var errs []error
	for _, p := range t.view().Peers {
		if !p.up() {
			continue
		}
		target, fenced := p.one.fence()
		if fenced {
			continue
		}
		g, err := t.startGet(p, 0, nil)
		if err == nil {
			err = t.waitGet(p, g)
		}
		if err == nil {
			p.fenceDone(target)
		}
		for _, e := range [2]error{err, p.takePutErr()} {
			if e != nil { // an append of nils would allocate on every Quiet
				errs = append(errs, e)
			}
		}
	}
	return errors.Join(errs...)
}

// connErr turns an ioloop error from p's connection into the peer's loss.
func (t *NetTransport) connErr(p *peer, op string, err error) error {
	if errors.Is(err, ioloop.ErrCanceled) {
		return err
	}
	if e := p.lostErr(op); e != nil {
		return e
	}
	if t.closed.Load() {
		return &PeerError{Op: op, Rank: p.rank, Err: ErrClosed}
	}
	if p.link != nil {
		err = p.link.cause(err)
	}
	return &PeerError{Op: op, Rank: p.rank, Err: ErrPeerLost, Cause: err}
}

// SymmetricBuffer names Len bytes at Offset in rank Rank's symmetric heap.
// Buffers from Alloc carry this rank; On names the same range on another
// rank, which holds it too when every rank made the same allocations.
type SymmetricBuffer struct {
	Rank   int
	Offset uint64
	Len    uint64
}

// On returns the same range in rank's heap.
func (b SymmetricBuffer) On(rank int) SymmetricBuffer {
	b.Rank = rank
	return b
}

// SymmetricTransport is one-sided communication over symmetric heaps, as
// in OpenSHMEM: a rank writes (Put) into and reads (Get) from another
// rank's heap without that rank taking part.
type SymmetricTransport interface {
	// Rank is this process's rank in [0, WorldSize()).
	Rank() int
	// WorldSize is the number of ranks.
	WorldSize() int
	// Put writes src into dst (dst.Len == len(src)). It returns when src may
	// be reused; the data is visible at the target after Quiet or Barrier.
	// A put the target refuses fails the next Quiet or Barrier.
	Put(dst SymmetricBuffer, src []byte) error
	// Get reads src into dst (src.Len == len(dst)) and returns when dst
	// holds the data.
	Get(src SymmetricBuffer, dst []byte) error
	// PutNB starts a Put; src must stay untouched until the Request's Wait.
	PutNB(dst SymmetricBuffer, src []byte) (Request, error)
	// GetNB starts a Get; dst holds the data once the Request's Wait
	// returns nil.
	GetNB(src SymmetricBuffer, dst []byte) (Request, error)
	// Quiet returns when every put this rank issued is complete and visible
	// at its target, with the errors of any the targets refused.
	Quiet() error
	// Barrier is Quiet on every rank followed by a barrier: after it
	// returns anywhere, every put issued before it by any rank is visible.
	Barrier() error
	// Close releases the transport and unmaps the heap.
	Close() error
}

var _ SymmetricTransport = (*NetTransport)(nil)

// Heap returns a view of this rank's symmetric heap: its size, memory and
// what is in use. The transport owns the heap: it allocates in it (Alloc,
// Free) and closes it with itself, and the view cannot.
func (t *NetTransport) Heap() heap.View { return t.heap.View() }

// Alloc allocates size bytes aligned to align (0: heap.DefaultAlign) in
// this rank's heap. Ranks that make the same sequence of Alloc and Free
// calls get the same offsets; collective.Comm.Alloc checks that they did.
func (t *NetTransport) Alloc(size, align uint64) (SymmetricBuffer, error) {
	b, err := t.heap.Alloc(size, align)
	if err != nil {
		return SymmetricBuffer{}, err
	}
	return SymmetricBuffer{Rank: t.rank, Offset: b.Offset, Len: b.Len}, nil
}

// Free releases a buffer from Alloc.
func (t *NetTransport) Free(b SymmetricBuffer) error {
	return t.heap.Free(heap.Buffer{Offset: b.Offset, Len: b.Len})
}

// Bytes returns this rank's view of b's range: valid until b is freed or
// the transport closed.
func (t *NetTransport) Bytes(b SymmetricBuffer) ([]byte, error) {
	return t.heap.Bytes(heap.Buffer{Offset: b.Offset, Len: b.Len})
}
