package collective

import (
	"context"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/internal/plumb"
)

// topologyOf returns t's engine.Topology, or, for a transport that does
// not tell (a test's), a full mesh on this machine.
func topologyOf(t Transport) engine.Topology {
	if s, ok := t.(interface{ Topology() engine.Topology }); ok {
		return s.Topology()
	}
	return engine.Topology{Center: -1, Loopback: true}
}

// useStar reports whether an allreduce over n ranks runs the star
// algorithm: on a star of more than two ranks, where recursive doubling
// and the ring would send every worker-to-worker message through the
// coordinator twice.
func (c *Comm) useStar(n int) bool { return c.center >= 0 && n > 2 }

// star reduces at the coordinator, then broadcasts: every worker sends its
// data to the center, which receives them in rank order and reduces each
// into its own, then sends the result back to every worker. Only the
// center reduces, so every rank ends with the same bits. Data longer than
// a piece goes in pieces (starPieces).
func (c *Comm) star(ctx context.Context, tag uint32, dt DType, data []byte, op Op) error {
	r, n, center := c.t.Rank(), c.t.WorldSize(), c.center
	if piece := c.starPiece(dt.Size()); len(data) > piece {
		return c.starPieces(ctx, tag, dt, data, op, piece)
	}
	if r != center {
		if err := c.send(ctx, center, tag, data); err != nil {
			return err
		}
		m, err := c.recv(ctx, center, tag+1, data)
		if err == nil {
			err = c.recvCheck(m, len(data), center)
		}
		return err
	}
	buf := c.scratch(len(data))
	for from := range n {
		if from == center {
			continue
		}
		m, err := c.recv(ctx, from, tag, buf)
		if err == nil {
			err = c.recvCheck(m, len(data), from)
		}
		if err == nil {
			err = CombineBytes(dt, data, buf, op)
		}
		if err != nil {
			return err
		}
	}
	for to := range n {
		if to == center {
			continue
		}
		if err := c.send(ctx, to, tag+1, data); err != nil {
			return err
		}
	}
	return nil
}

// A star's allreduce in pieces. Whole messages serialize the link the
// coordinator's reduce depends on: past the eager limit a worker's data
// moves only once the center posts its receive, one worker after another,
// and no result leaves before every contribution is in. In pieces
// (Options.Chunk, whole elements; no pair of a star shares memory, so
// every pair has the same), every worker streams its pieces at once, and
// the center reduces piece k as soon as every worker's is in and sends it
// back while later pieces are still coming: the time is what the
// center's link needs to carry the results, plus a piece.
//
//	worker: for k: [k >= starWindow: result k-starWindow]; start piece k
//	        then the results left, each into the piece it replaces
//	center: for k: recv piece k from each worker (rank order), reduce;
//	        send the result k to each worker
//
// The last piece, and its result, go on tag+1, the others on tag: ranks
// whose lengths differ hold pieces of another step of the call, which
// fails them (as a longer piece does) instead of leaving one waiting; and
// the center, once a worker's last piece is in, looks for one more of its
// on tag (starLonger).

// starWindow is how many of its pieces a worker has in flight beyond the
// result it waits for. A piece sent eagerly costs at most a quarter of the
// receiver's flow-control window (engine.Options.EagerMax), so 3 never
// fill it, whatever the ranks' options: a worker blocked for credit can
// always be unblocked by the center taking its oldest piece, and a result
// the center sends always finds room. (A piece past the eager limit waits
// at the center, costing no credit but its announcement.)
const starWindow = 3

// starPiece is the piece size of a star allreduce in pieces.
func (c *Comm) starPiece(esz int) int { return max(c.opts.Chunk/esz*esz, esz) }

// starPieces is the star allreduce in pieces of piece bytes.
func (c *Comm) starPieces(ctx context.Context, tag uint32, dt DType, data []byte, op Op, piece int) error {
	np := (len(data) + piece - 1) / piece
	at := func(k int) (uint32, []byte) {
		if k == np-1 {
			return tag + 1, data[k*piece:]
		}
		return tag, data[k*piece : (k+1)*piece]
	}
	if c.t.Rank() != c.center {
		return c.starWorker(ctx, np, at)
	}
	buf := c.scratch(piece)
	for k := range np {
		t, part := at(k)
		for from := range c.t.WorldSize() {
			if from == c.center {
				continue
			}
			m, err := c.recv(ctx, from, t, buf[:len(part)])
			if err == nil {
				err = c.recvCheck(m, len(part), from)
			}
			if err == nil && k == np-1 {
				err = c.starLonger(from, tag, len(data), buf)
			}
			if err == nil {
				err = CombineBytes(dt, part, buf[:m], op)
			}
			if err != nil {
				return err
			}
		}
		for to := range c.t.WorldSize() {
			if to == c.center {
				continue
			}
			if err := c.send(ctx, to, t, part); err != nil {
				return err
			}
		}
	}
	return nil
}

// starLonger checks, once the last piece of worker from is in, that it
// sent no more on tag: a worker whose data is longer by whole pieces sends
// this center's last piece on tag, and a last of its own on tag+1 that the
// center took for this one's. A worker's frames come on one stream, in
// order, so such a piece is in by now.
func (c *Comm) starLonger(from int, tag uint32, want int, buf []byte) error {
	m, ok, err := c.tryRecv(from, tag, buf)
	switch {
	case err != nil:
		return err
	case ok:
		return &CallLengthError{Rank: from, Want: want, Got: want + m} // at least
	}
	return nil
}

// starWorker is a worker's part of starPieces: np pieces, piece k's tag
// and bytes at(k).
func (c *Comm) starWorker(ctx context.Context, np int, at func(k int) (uint32, []byte)) (err error) {
	sends := c.sendSlots(np)
	defer func() {
		for k, h := range sends {
			c.drop(c.center, h) // a failed call's: returns once the piece may be reused
			sends[k] = plumb.Handle{}
		}
	}()
	result := func(k int) error {
		// Over by now: the center had the piece before it sent the result.
		_, _, err := c.wire.Wait(c.center, sends[k], plumb.Waiting{Ctx: ctx})
		sends[k] = plumb.Handle{}
		if err != nil {
			return err
		}
		t, part := at(k)
		m, err := c.recv(ctx, c.center, t, part)
		if err == nil {
			err = c.recvCheck(m, len(part), c.center)
		}
		return err
	}
	for k := range np {
		if k >= starWindow {
			if err := result(k - starWindow); err != nil {
				return err
			}
		}
		if err := c.sending(ctx); err != nil {
			return err
		}
		t, part := at(k)
		h, err := c.start(ctx, c.center, t, part)
		if err != nil {
			return err
		}
		sends[k] = h
	}
	for k := max(np-starWindow, 0); k < np; k++ {
		if err := result(k); err != nil {
			return err
		}
	}
	return nil
}
