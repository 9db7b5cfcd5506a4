package shm

import "unsafe"

// storeRelease stores v at w, after every load and store before it: a
// box's consumer hands a slot back with it once the slot's bytes are
// copied out. amd64 (TSO) never moves a store before older loads or
// stores, so a plain store does, and unlike an atomic store (a locked
// exchange here) it waits for nothing.
func storeRelease(w *uint64, v uint64) { *(*uint64)(unsafe.Pointer(w)) = v }
