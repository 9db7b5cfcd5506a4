package collective

import (
	"errors"
	"testing"

	"github.com/boltmesh/boltmesh/engine"
)

// FuzzAllocAgree feeds allocAgree another rank's record as a lying or
// broken peer might send it: agreement exactly when the record is this
// rank's own, otherwise an *AllocMismatchError naming that rank, with its
// allocation as the record says (none when it says it failed).
func FuzzAllocAgree(f *testing.F) {
	f.Add(int64(1), int64(4096), int64(100), uint8(1))
	f.Add(int64(1), int64(0), int64(100), uint8(0))
	f.Add(int64(0), int64(4096), int64(100), uint8(2))
	f.Add(int64(7), int64(-1), int64(-1<<63), uint8(1))
	f.Fuzz(func(t *testing.T, ok, off, n int64, at uint8) {
		b := engine.SymmetricBuffer{Offset: 4096, Len: 100}
		mine := allocRecord(b, nil)
		const ranks = 3
		r := int(at % ranks)
		all := make([]int64, 0, ranks*allocFields)
		for i := range ranks {
			if i == r {
				all = append(all, ok, off, n)
			} else {
				all = append(all, mine[:]...)
			}
		}
		err := allocAgree(b, mine, all)
		if [allocFields]int64{ok, off, n} == mine {
			if err != nil {
				t.Fatalf("the same record: %v", err)
			}
			return
		}
		var ae *AllocMismatchError
		if !errors.As(err, &ae) || !errors.Is(err, ErrAllocMismatch) || ae.Rank != r || ae.Local != b {
			t.Fatalf("record %d %d %d from rank %d: %v, want an *AllocMismatchError naming it", ok, off, n, r, err)
		}
		if ae.Failed != (ok != 1) || (!ae.Failed && (ae.Remote.Offset != uint64(off) || ae.Remote.Len != uint64(n))) {
			t.Fatalf("record %d %d %d: %+v", ok, off, n, *ae)
		}
		_ = err.Error()
	})
}
