package shm

import (
	"sync/atomic"
	"unsafe"
)

// On amd64 (TSO) stores are not reordered with older stores, nor loads
// with older loads: the mailbox's seqlock needs no fence of its own, and
// a plain store of the odd gen is seen before the slot's bytes change.

// markWriting stores a slot's odd gen g before its writer changes it.
func markWriting(gen *atomic.Uint64, g uint64) { *(*uint64)(unsafe.Pointer(gen)) = g }

// loadFence orders a seqlock reader's loads (nothing to do here).
func loadFence() {}
