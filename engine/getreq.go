package engine

import (
	"sync/atomic"

	"github.com/boltmesh/boltmesh/frame"
)

// getReq is one pending get (or Quiet fence): the reply with its id is read
// into dst. It is recycled through a pool.
type getReq struct {
	dst   []byte
	id    uint64
	req   [frame.GetReqSize]byte // the request payload, stable until sent
	err   error
	state atomic.Uint32 // reqPosted, reqClaimed, reqDone
	done  chan struct{} // buffered 1: completion token
}

func newGetReq() any { return &getReq{done: make(chan struct{}, 1)} }

func (g *getReq) complete(err error) {
	g.err = err
	g.state.Store(reqDone)
	g.done <- struct{}{}
}

func (g *getReq) reset() {
	g.dst, g.err = nil, nil
	g.state.Store(reqPosted)
}
