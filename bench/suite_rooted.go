package bench

import "context"

// The gather and scatter suites time engine/collective's Gather to rank 0
// and Scatter from it: size is each rank's segment (the root's whole is
// ranks x size). Every iteration's bytes depend on the iteration and the
// rank; the root checks every segment it gathered, and every rank the
// segment scattered to it (first, middle and last byte each iteration,
// every byte of the last). boltmesh only: stdnet has no such calls.
func init() {
	for _, s := range []struct{ name, doc string }{
		{"gather", "every rank's segment gathered at rank 0, size per rank (boltmesh only)"},
		{"scatter", "a segment from rank 0 to every rank, size per rank (boltmesh only)"},
	} {
		Register(&Suite{
			Name:       s.name,
			Doc:        s.doc,
			Sizes:      []int{8, 64 << 10, 1 << 20, 16 << 20},
			QuickSizes: []int{8, 1 << 20},
			Align:      4,
			MinRanks:   2,
			Impls:      []string{ImplBoltmesh},
			Ops:        []Op{{Name: s.name, Start: startRooted}},
		})
	}
}

// rooter is an Endpoint with Gather and Scatter: counts are every rank's
// segment, in 4-byte elements (the segments' bytes move as they are).
type rooter interface {
	Gather(ctx context.Context, root int, seg, whole []byte, counts []int) error
	Scatter(ctx context.Context, root int, whole, seg []byte, counts []int) error
}

// rooted is one gather or scatter case on one rank.
type rooted struct {
	c          *Case
	r          rooter
	gather     bool
	seg, whole []byte // whole: the root's only
	counts     []int
}

func startRooted(c *Case) (Body, error) {
	r, ok := c.EP.(rooter)
	if !ok {
		return nil, ErrUnsupported
	}
	n := c.EP.Ranks()
	b := &rooted{c: c, r: r, gather: c.Op == "gather", seg: make([]byte, c.Size), counts: make([]int, n)}
	for i := range b.counts {
		b.counts[i] = c.Size / 4
	}
	if c.EP.Rank() == 0 {
		b.whole = make([]byte, n*c.Size)
	}
	return b, nil
}

// rootedByte is byte j of rank r's segment in iteration i.
func rootedByte(i, r, j int) byte { return byte(i*131 + r*29 + j*7 + 3) }

// marks are the bytes of a segment stamped and checked each iteration.
func (b *rooted) marks() [3]int { n := b.c.Size; return [3]int{0, n / 2, n - 1} }

// Prepare stamps what the sender sends, and clears the marks of what is
// received.
func (b *rooted) Prepare(i int) error {
	if b.c.Size == 0 {
		return nil
	}
	me, n := b.c.EP.Rank(), b.c.EP.Ranks()
	for _, j := range b.marks() {
		// Gather: every rank stamps its segment, the root clears what it
		// gathers into; Scatter: the root stamps every segment, every rank
		// clears its own.
		mine := rootedByte(i, me, j)
		if !b.gather {
			mine = ^mine
		}
		b.seg[j] = mine
		if me != 0 {
			continue
		}
		for r := range n {
			w := rootedByte(i, r, j)
			if b.gather {
				w = ^w
			}
			b.whole[r*b.c.Size+j] = w
		}
	}
	return nil
}

// Iter implements Body.
func (b *rooted) Iter(i int) error {
	var err error
	if b.gather {
		err = b.r.Gather(b.c.Ctx, 0, b.seg, b.whole, b.counts)
	} else {
		err = b.r.Scatter(b.c.Ctx, 0, b.whole, b.seg, b.counts)
	}
	if err != nil || b.c.Size == 0 {
		return err
	}
	return b.check(i, b.marks())
}

// check verifies bytes js of what this rank received in iteration i.
func (b *rooted) check(i int, js [3]int) error {
	me, n := b.c.EP.Rank(), b.c.EP.Ranks()
	for _, j := range js {
		if !b.gather {
			if got, want := b.seg[j], rootedByte(i, me, j); got != want {
				return checkErr(me, "iteration %d: byte %d of %d is %#x, want %#x", i, j, b.c.Size, got, want)
			}
			continue
		}
		for r := range n {
			if me != 0 {
				break
			}
			if got, want := b.whole[r*b.c.Size+j], rootedByte(i, r, j); got != want {
				return checkErr(me, "iteration %d: byte %d of rank %d's segment is %#x, want %#x", i, j, r, got, want)
			}
		}
	}
	return nil
}

// Finish checks every byte of the last iteration's: the marks it
// stamped, and zeros elsewhere (no byte but the marks is ever written).
func (b *rooted) Finish(iters int) error {
	if iters == 0 || b.c.Size == 0 {
		return nil
	}
	me, n, last := b.c.EP.Rank(), b.c.EP.Ranks(), iters-1
	m := b.marks()
	want := func(r, j int) byte {
		if j == m[0] || j == m[1] || j == m[2] {
			return rootedByte(last, r, j)
		}
		return 0
	}
	if !b.gather {
		for j, got := range b.seg {
			if got != want(me, j) {
				return checkErr(me, "after %d scatters: byte %d of %d is %#x, want %#x", iters, j, b.c.Size, got, want(me, j))
			}
		}
		return nil
	}
	if me != 0 {
		return nil
	}
	for r := range n {
		for j, got := range b.whole[r*b.c.Size : (r+1)*b.c.Size] {
			if got != want(r, j) {
				return checkErr(me, "after %d gathers: byte %d of rank %d's segment is %#x, want %#x", iters, j, r, got, want(r, j))
			}
		}
	}
	return nil
}
