package collective

import (
	"context"

	"github.com/boltmesh/boltmesh/engine"
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
// center reduces, so every rank ends with the same bits.
func (c *Comm) star(ctx context.Context, tag uint32, dt DType, data []byte, op Op) error {
	r, n, center := c.t.Rank(), c.t.WorldSize(), c.center
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
