package train

import (
	"hash/fnv"
	"unsafe"

	"github.com/boltmesh/boltmesh/engine/collective"
)

// verify checks, after global step step, that every rank holds the same
// weights: first, if any rank fell behind a deadline round since the last
// check, every rank takes rank 0's weights (resynced); then the ranks
// compare an FNV-1a hash of the weights' bits (AllReduce Max over the
// hash and its complement gives the largest and the smallest).
func (tr *Trainer) verify(step int) (resynced bool, err error) {
	for {
		h := weightHash(tr.model.Params)
		tr.check[0], tr.check[1], tr.check[2] = 0, h, ^h
		if tr.behind && !resynced {
			tr.check[0] = 1
		}
		if err := collective.AllReduce(tr.comm, tr.check, collective.Max); err != nil {
			return resynced, err
		}
		if tr.check[0] != 0 {
			if err := collective.Broadcast(tr.comm, 0, tr.model.Params); err != nil {
				return resynced, err
			}
			resynced, tr.behind = true, false
			continue
		}
		if hi, lo := tr.check[1], ^tr.check[2]; hi != lo {
			return resynced, &DivergedError{Step: step, Min: lo, Max: hi}
		}
		return resynced, nil
	}
}

// weightHash is the FNV-1a hash of p's bits, as an int64.
func weightHash(p []float32) int64 {
	h := fnv.New64a()
	h.Write(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(p))), len(p)*4))
	return int64(h.Sum64())
}
