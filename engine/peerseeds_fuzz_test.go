package engine_test

import (
	"bytes"

	"github.com/boltmesh/boltmesh/frame"
)

// Size bytes of exact sizes (see size).
const (
	sz4K   = 3 | 16<<3
	sz8K   = 4 | 16<<3
	sz64K  = 6 | 16<<3
	sz256K = 7 | 16<<3
)

// sz returns the size byte of n bytes, n < 32.
func sz(n int) byte { return byte(n << 3) }

// peerSeeds are meaningful scripts: each step is an opcode and its
// argument bytes, as the op* methods read them.
func peerSeeds(star bool) [][]byte {
	s := func(steps ...[]byte) []byte { return bytes.Join(steps, nil) }
	st := func(op byte, args ...byte) []byte { return append([]byte{op}, args...) }
	id8 := []byte{9, 0, 0, 0, 0, 0, 0, 0}
	fence := st(opFence)
	raw := func(kind, flags byte, dst byte, stream, lb byte) []byte {
		return s(st(opRaw, 0, kind, flags, dst, 0, 1, 0, 0, 0), id8, []byte{stream, lb})
	}
	seeds := [][]byte{
		s(st(opSend, 0, 0, sz(8), 0), st(opRankRecv, 0, 0, 0), fence),                                                           // a message, then its receive
		s(st(opRankRecv, 0, 1, 0), fence, st(opSend, 0, 1, sz4K, 0), fence),                                                     // a receive, then its message
		s(st(opRankRecv, 0, 1, 1|sz(4)<<2), st(opSend, 0, 1, sz(9), 0), fence),                                                  // too long for the receive's buffer
		s(st(opRTS, 0, 2, sz8K, 0, 0), st(opRankRecv, 0, 2, 0), fence, st(opData, 0, 0, 0, 0, 0)),                               // rendezvous
		s(st(opRTS, 0, 3, sz8K, 0, 0), st(opRankRecv, 0, 3, 0), fence, st(opData, 0, 0, 1, 0, 0), st(opData, 0, 0, 1, 1, 0x10)), // striped
		s(st(opRTS, 0, 1, 0, 0, 0), st(opRankRecv, 0, 1, 3), fence, st(opData, 0, 0, 0, 0, 0)),                                  // an empty rendezvous message, into a nil buffer
		s(st(opSend, 0, 0, sz64K, 1)),                                       // beyond the window: a credit overrun
		s(st(opData, 0, 0x80, 0, 0, 40)),                                    // DATA for an unknown send id
		s(st(opCTS, 0, 0x80, 0)),                                            // a CTS for nothing
		s(st(opRTS, 0, 0, sz(8), 0, 0), st(opWithdraw, 0, 0, 0), fence),     // a withdrawal
		s(st(opRTS, 0, 0, sz(8), 0, 0), st(opWithdraw, 0, 0, 1), fence),     // on the control stream (mesh)
		s(st(opWithdraw, 0, 0x80, 1), fence, st(opRTS, 0, 0, sz(8), 0, 0)),  // of an unknown send: a tombstone
		s(st(opRankSend, 0, 0, sz8K, 0), fence, st(opCTS, 0, 0, 0), fence),  // the rank's rendezvous send, answered
		s(st(opRankSend, 0, 0, sz8K, 0), fence, st(opCTS, 0, 0, 1), fence),  // refused
		s(st(opRankGet, 0, 0, 0, 0, sz(8)), fence, st(opGetReply, 0, 0, 0)), // the rank's get, answered
		s(st(opRankGet, 0, 0, 0, 0, sz(8)), fence, st(opGetReply, 0, 0, 1)), // with the wrong length
		s(st(opPut, 0, 2, 5, 0, sz(8), 0), st(opGetReq, 0, 2, 5, 0, sz(8))), // outside the heap
		s(st(opPut, 0, 0, 5, 0, sz(8), 0), st(opGetReq, 0, 0, 5, 0, sz(8))), // inside
		s(st(opRPC, 0, 0, sz(8), 1, 0, 0, 0), id8, st(opRPC, 0, 1, sz(3), 1, 0, 2, 0), id8),
		s(st(opControl, 0, 1, 3), st(opSend, 0, 0, sz64K, 1)), // GOODBYE, then an overrun
		s(st(opPut, 0, 0, 0, 0, sz256K, 0)),                   // a frame above MaxFrame
		raw(byte(frame.KindCTS), 0, 0, 1, 0),                  // a CTS on a stripe stream
		raw(byte(frame.KindSend), 0, 2, 0, sz(1)),             // a SEND with Dst set
		raw(14, 0, 0, 0, 0),                        // a retired kind
		raw(byte(frame.KindCredit), 0x80, 0, 0, 0), // a flag no kind has
		// Pieces of two counts: piece 1 of 2, then the whole message as 1 of 1.
		s(st(opRTS, 0, 0, sz8K, 0, 0), st(opRankRecv, 0, 0, 0), fence, st(opData, 0, 0, 1, 1, 0), st(opData, 0, 0, 0, 0, 0)),
		// Two RTSs with one send id, both taken by receives.
		s(st(opRTS, 0, 0, sz(8), 0, 0), st(opRTS, 0, 0, sz(8), 0, 2), st(opRankRecv, 0, 0, 0), st(opRankRecv, 0, 0, 0), fence),
	}
	if star {
		seeds = append(seeds,
			s(st(opSend, 1, 1, sz(8), 0), st(opRankRecv, 1, 1, 0), fence),                             // to worker 1, through the coordinator
			s(st(opRTS, 1, 2, sz8K, 0, 0), st(opRankRecv, 1, 2, 0), fence, st(opData, 1, 0, 0, 0, 0)), // rendezvous with worker 1
			s(st(opCTS, 1, 0x80, 0)),                  // a CTS for nothing, to worker 1
			raw(byte(frame.KindSend), 0, 3, 0, sz(1)), // a SEND for the raw rank itself
			raw(byte(frame.KindSend), 0, 6, 0, sz(1)), // a SEND for a rank outside the world
		)
	}
	return seeds
}
