package bench

// The broadcast suite times a broadcast from rank 0 to every rank (on
// boltmesh, engine/collective's (a binomial tree, or from
// BcastScatterMin a scatter and a chain); on stdnet, a binomial tree
// over net.Conn). Every iteration's bytes depend on the iteration, and
// every rank checks them; busbw is algbw, as nccl-tests define it for a
// broadcast.
func init() {
	Register(&Suite{
		Name:       "broadcast",
		Doc:        "broadcast from rank 0 to all ranks",
		Sizes:      []int{8, 64 << 10, 1 << 20, 16 << 20},
		QuickSizes: []int{8, 1 << 20},
		MinRanks:   2,
		Ops:        []Op{{Name: "broadcast", Start: startBroadcast}},
	})
}

// broadcast sends data from rank 0; Prepare writes the iteration's
// stamp at the root and clears the others' copies.
type broadcast struct {
	c    *Case
	data []byte
}

func startBroadcast(c *Case) (Body, error) {
	b := &broadcast{c: c, data: make([]byte, c.Size)}
	if c.EP.Rank() == 0 {
		for j := range b.data {
			b.data[j] = bcastByte(-1, j)
		}
	}
	return b, nil
}

// bcastByte is byte j of iteration i's message.
func bcastByte(i, j int) byte { return byte(i*131 + j*7 + 3) }

// bcastMarks are the bytes set and checked each iteration: first,
// middle, last.
func (b *broadcast) bcastMarks() [3]int {
	n := len(b.data)
	return [3]int{0, n / 2, n - 1}
}

// Prepare stamps the root's message, and clears the marks elsewhere.
func (b *broadcast) Prepare(i int) error {
	if len(b.data) == 0 {
		return nil
	}
	for _, j := range b.bcastMarks() {
		if b.c.EP.Rank() == 0 {
			b.data[j] = bcastByte(i, j)
		} else {
			b.data[j] = ^bcastByte(i, j)
		}
	}
	return nil
}

// Iter implements Body.
func (b *broadcast) Iter(i int) error {
	if err := b.c.EP.Broadcast(b.c.Ctx, 0, b.data); err != nil {
		return err
	}
	if len(b.data) == 0 {
		return nil
	}
	for _, j := range b.bcastMarks() {
		if got, want := b.data[j], bcastByte(i, j); got != want {
			return checkErr(b.c.EP.Rank(), "iteration %d: byte %d of %d is %#x, want %#x", i, j, len(b.data), got, want)
		}
	}
	return nil
}

// Finish checks every byte of the last message: the root's pattern, but
// for the marks of the last iteration.
func (b *broadcast) Finish(iters int) error {
	if iters == 0 || len(b.data) == 0 {
		return nil
	}
	m := b.bcastMarks()
	for j, got := range b.data {
		want := bcastByte(-1, j)
		if j == m[0] || j == m[1] || j == m[2] {
			want = bcastByte(iters-1, j)
		}
		if got != want {
			return checkErr(b.c.EP.Rank(), "after %d broadcasts: byte %d of %d is %#x, want %#x", iters, j, len(b.data), got, want)
		}
	}
	return nil
}
