//go:build !amd64

package shm

import "sync/atomic"

// fence is the word whose read-modify-write is a full barrier on every
// architecture Go supports, as the mailbox's seqlock needs on weakly
// ordered ones (arm64): its writer's plain stores after the odd gen must
// not become visible before it, and its reader's plain loads before
// settled's gen load must not be satisfied after it.
var fence atomic.Uint32

// markWriting stores a slot's odd gen g before its writer changes it.
func markWriting(gen *atomic.Uint64, g uint64) {
	gen.Store(g)
	fence.Add(1)
}

// loadFence orders a seqlock reader's loads before the ones after it.
func loadFence() { fence.Add(1) }
