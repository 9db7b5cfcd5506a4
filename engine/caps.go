package engine

import linkshm "github.com/boltmesh/boltmesh/internal/link/shm"

// caps is what a peer's link can do besides carry frames, as its medium
// found it when the pair met: one value per peer, filled by the medium
// as the link is adopted (shared memory: usePair, link_pipes.go) and
// never changed after, so that no component asks which medium a link is.
// A new medium (RDMA, a Thunderbolt DMA ring) fills the same fields: a
// remote heap it writes, a peer copy it reads, polls of its completion
// queue that cost a load.
//
// Lock rule: none; a peer's caps are published once (peer.setCaps),
// before its window opens, and read through an atomic pointer.
type caps struct {
	// cheap: a poll of the link costs a load, not a system call (pipes):
	// a spin reads the clock less often and yields less (recv.go).
	cheap bool
	// mailbox is a mailbox shared with the peer (internal/link/shm): a
	// collective exchange's parts and barrier signals without frames.
	mailbox *linkshm.Mailbox
	// heap is the peer's symmetric heap, mapped here: Put and Get copy
	// (putget.go). It is the peer's: unmapped at Close.
	heap *linkshm.MappedHeap
	// copy is the single copy (single_copy.go): whether this rank copies
	// the peer's messages itself (In), whether the peer copies this
	// rank's (Out), and the peer's process.
	copy linkshm.PairCopy
}

// noCaps is a link's caps when its medium found none: a TCP stream's, a
// star's, this rank's own.
var noCaps = &caps{}

// can returns p's caps.
func (p *peer) can() *caps {
	if c := p.caps.Load(); c != nil {
		return c
	}
	return noCaps
}

// setCaps publishes p's caps, once, as its link is adopted.
func (p *peer) setCaps(c *caps) { p.caps.Store(c) }
