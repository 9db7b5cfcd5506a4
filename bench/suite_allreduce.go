package bench

// The allreduce suite times a float32 Sum allreduce across all ranks (on
// boltmesh, engine/collective; on stdnet, recursive doubling or a ring
// over net.Conn with the same reduction kernel). Every rank checks its
// result, which is exact: small integers.
func init() {
	Register(&Suite{
		Name:       "allreduce",
		Doc:        "float32 sum allreduce across all ranks (busbw = algbw * 2(n-1)/n)",
		Sizes:      []int{8, 1 << 10, 64 << 10, 1 << 20, 16 << 20},
		QuickSizes: []int{8, 64 << 10, 1 << 20},
		Align:      4,
		MinRanks:   1,
		Ops:        []Op{{Name: "allreduce", BusFactor: AllReduceBusFactor, Start: startAllReduce}},
	})
}

// arPeriod is the period of the contributions over element indices.
const arPeriod = 7

// allreduce reduces data in place; Prepare restores the contribution.
type allreduce struct {
	c         *Case
	src, data []float32
	sums      [arPeriod]float32
}

func startAllReduce(c *Case) (Body, error) {
	r, n := c.EP.Rank(), c.EP.Ranks()
	b := &allreduce{c: c, src: make([]float32, c.Size/4), data: make([]float32, c.Size/4)}
	for j := range b.src {
		b.src[j] = arContribution(r, j)
	}
	for j := range b.sums {
		for q := range n {
			b.sums[j] += arContribution(q, j)
		}
	}
	return b, nil
}

// arContribution is rank r's element j: small integers, so that every sum
// is exact in float32 whatever the order.
func arContribution(r, j int) float32 { return float32(r + 1 + j%arPeriod) }

// Prepare restores this rank's contribution.
func (b *allreduce) Prepare(int) error {
	copy(b.data, b.src)
	return nil
}

// Iter implements Body.
func (b *allreduce) Iter(i int) error {
	if err := b.c.EP.AllReduceSum(b.c.Ctx, b.data); err != nil {
		return err
	}
	if i < 0 {
		return b.check(i, 1)
	}
	return b.check(i, max(len(b.data)/2, 1))
}

// check verifies every stride-th element, and the last.
func (b *allreduce) check(i, stride int) error {
	for j := 0; j < len(b.data); j += stride {
		if err := b.checkElem(i, j); err != nil {
			return err
		}
	}
	if len(b.data) > 0 {
		return b.checkElem(i, len(b.data)-1)
	}
	return nil
}

func (b *allreduce) checkElem(i, j int) error {
	if got, want := b.data[j], b.sums[j%arPeriod]; got != want {
		return checkErr(b.c.EP.Rank(), "iteration %d: element %d of %d is %v, want %v", i, j, len(b.data), got, want)
	}
	return nil
}

// Finish checks every element of the last result.
func (b *allreduce) Finish(iters int) error {
	if iters == 0 {
		return nil
	}
	return b.check(iters-1, 1)
}
