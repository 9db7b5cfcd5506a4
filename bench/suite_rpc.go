package bench

import (
	"bytes"
	"context"
)

// The rpc suite times the round trip of a synchronous call: rank 0 calls
// echo on rank 1, which returns the size-byte arguments unchanged (other
// ranks serve too, but idle). On boltmesh the call goes through an
// rpc.Agent on the transport; on stdnet through Go's net/rpc over a plain
// TCP connection. GB/s is size / round trip, as for p2p's pingpong.
//
// Every rank starts its RPC service in the first case's Start, which every
// rank runs before the harness agrees that the case may begin: no call is
// made before every rank serves.
func init() {
	Register(&Suite{
		Name:       "rpc",
		Doc:        "echo call round trip from rank 0 to rank 1 (stdnet: net/rpc)",
		Sizes:      []int{8, 1 << 10, 64 << 10, 1 << 20},
		QuickSizes: []int{8, 64 << 10, 1 << 20},
		MinRanks:   2,
		Ops:        []Op{{Name: "call", Start: startCall}},
	})
}

// call: rank 0 calls echo on rank 1 with message i. The reply's length and
// marks are checked at once; the whole reply is compared with message i
// before the next call (in Prepare, untimed) or in Finish, so that every
// reply is verified byte for byte without the comparison being timed.
type call struct {
	ep   Endpoint
	rpc  RPC
	ctx  context.Context
	size int
	args []byte // message i
	want []byte // the pattern, stamped with the number of the reply checked

	reply   []byte // the last reply, not yet compared whole
	last    int    // its message number
	unsure  bool   // reply is waiting for its whole comparison
	pending error  // a failed whole comparison, reported by the next Iter
}

func startCall(c *Case) (Body, error) {
	r, err := c.EP.RPC()
	if err != nil {
		return nil, err
	}
	b := &call{ep: c.EP, rpc: r, ctx: c.Ctx, size: c.Size}
	if c.EP.Rank() == 0 {
		b.args, b.want = pattern(c.Size), pattern(c.Size)
	}
	return b, nil
}

// Prepare compares the previous reply whole.
func (b *call) Prepare(int) error {
	if b.unsure {
		b.pending = b.verify()
	}
	return nil
}

// Iter implements Body.
func (b *call) Iter(i int) error {
	if b.ep.Rank() != 0 {
		return nil // rank 1's agent or server answers
	}
	stamp(b.args, i)
	reply, err := b.rpc.Echo(b.ctx, 1, b.args)
	if err != nil {
		return err
	}
	b.reply, b.last, b.unsure = reply, i, true
	if err, b.pending = b.pending, nil; err != nil {
		return err
	}
	return checkMarks(0, reply, len(reply), b.size, i)
}

// verify compares the last reply with the message it answers.
func (b *call) verify() error {
	b.unsure = false
	stamp(b.want, b.last)
	if bytes.Equal(b.reply, b.want) {
		return nil
	}
	return checkWhole(0, b.reply, b.size, b.last) // says where they differ
}

// Finish compares the last reply whole.
func (b *call) Finish(int) error {
	if b.unsure {
		return b.verify()
	}
	return nil
}
