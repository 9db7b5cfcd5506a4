package collective

import (
	"errors"
	"sync"

	"github.com/boltmesh/boltmesh/internal/meshtest"
)

// pattern is meshtest.Pattern.
func pattern(from, to, tag, seq, n int) []byte { return meshtest.Pattern(from, to, tag, seq, n) }

// collPair runs f for ranks 0 and 1 at once and joins their errors.
func collPair(f func(r int) error) error {
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for r := range 2 {
		wg.Go(func() { errs[r] = f(r) })
	}
	wg.Wait()
	return errors.Join(errs...)
}
