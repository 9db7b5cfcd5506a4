//go:build !amd64

package shm

import "sync/atomic"

// storeRelease stores v at w, after every load and store before it (a
// release store: sync/atomic's is one, and no more, on arm64).
func storeRelease(w *uint64, v uint64) { atomic.StoreUint64(w, v) }
