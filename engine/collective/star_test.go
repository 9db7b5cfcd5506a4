package collective_test

import (
	"fmt"
	"testing"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/engine/collective"
	"github.com/boltmesh/boltmesh/internal/meshtest"
)

// TestMatrixStar runs the collective matrix (every collective, dtype and
// op) over star transports of 3, 4 and 5 ranks: AllReduce takes the star
// algorithm (reduce at the coordinator, then broadcast), the others run
// their usual schedules with worker-to-worker messages forwarded by the
// coordinator.
func TestMatrixStar(t *testing.T) {
	for _, n := range []int{3, 4, 5} {
		ts := meshtest.Star(t, n, engine.Options{})
		cs := make([]*collective.Comm, n)
		for r, tr := range ts {
			cs[r] = mustNew(t, tr, collective.Options{})
		}
		for _, length := range []int{0, 1, 7, 1000, 100003} {
			t.Run(fmt.Sprintf("n=%d/len=%d", n, length), func(t *testing.T) {
				if err := onAll(n, func(r int) error { return matrixRank(cs[r], r, n, length) }); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}
