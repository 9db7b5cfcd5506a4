package bench

import "errors"

// The putget suite: one-sided transfers between the symmetric heaps of
// ranks 0 and 1. put times a Put of size bytes into rank 1's heap plus the
// Quiet that makes it visible there; get times a Get of rank 1's bytes.
// Rank 1 takes no part in either.
func init() {
	Register(&Suite{
		Name:       "putget",
		Doc:        "one-sided put (with quiet) and get between ranks 0 and 1",
		Sizes:      []int{8, 1 << 10, 64 << 10, 1 << 20, 16 << 20},
		QuickSizes: []int{8, 64 << 10, 1 << 20},
		Align:      1,
		MinRanks:   2,
		Ops: []Op{
			{Name: "put", Start: startPut},
			{Name: "get", Start: startGet},
		},
	})
}

// oneSided is the state both ops share.
type oneSided struct {
	ep   Endpoint
	reg  Region
	size int
	buf  []byte
}

func newOneSided(c *Case) (*oneSided, error) {
	reg, err := c.EP.NewRegion(c.Size)
	if err != nil {
		return nil, err
	}
	return &oneSided{ep: c.EP, reg: reg, size: c.Size, buf: pattern(c.Size)}, nil
}

// put: rank 0 puts message i into rank 1's region and waits for it to be
// visible; rank 1 checks the last one after the loop.
type put struct{ *oneSided }

func startPut(c *Case) (Body, error) {
	o, err := newOneSided(c)
	if err != nil {
		return nil, err
	}
	return put{o}, nil
}

// Iter implements Body.
func (b put) Iter(i int) error {
	if b.ep.Rank() != 0 {
		return nil
	}
	stamp(b.buf, i)
	if err := b.reg.Put(1, b.buf); err != nil {
		return err
	}
	return b.reg.Quiet()
}

// Finish checks, on rank 1, that its region holds the last put.
func (b put) Finish(iters int) error {
	var err error
	if b.ep.Rank() == 1 && iters > 0 {
		got := make([]byte, b.size)
		if err = b.reg.Load(got); err == nil {
			err = checkWhole(1, got, b.size, iters-1)
		}
	}
	return errors.Join(err, b.reg.Free())
}

// getStamp is the message number rank 1's region holds for the get op.
const getStamp = 1 << 20

// get: rank 1's region holds a stamped pattern; rank 0 reads it.
type get struct {
	*oneSided
	fullDone bool
}

func startGet(c *Case) (Body, error) {
	o, err := newOneSided(c)
	if err != nil {
		return nil, err
	}
	if c.EP.Rank() == 1 {
		stamp(o.buf, getStamp)
		if err := o.reg.Store(o.buf); err != nil {
			return nil, errors.Join(err, o.reg.Free())
		}
	}
	return &get{oneSided: o}, nil
}

// Prepare spoils the marks of rank 0's buffer, so that a get that does not
// write them is caught.
func (b *get) Prepare(int) error {
	if b.ep.Rank() == 0 && b.size > 0 {
		for _, pos := range marks(b.size) {
			b.buf[pos] ^= 0xff
		}
	}
	return nil
}

// Iter implements Body.
func (b *get) Iter(i int) error {
	if b.ep.Rank() != 0 {
		return nil
	}
	if err := b.reg.Get(1, b.buf); err != nil {
		return err
	}
	if !b.fullDone {
		b.fullDone = true
		return checkWhole(0, b.buf, b.size, getStamp)
	}
	return checkMarks(0, b.buf, b.size, b.size, getStamp)
}

// Finish checks rank 0's last read, and that rank 1's region is unchanged.
func (b *get) Finish(iters int) error {
	var err error
	switch {
	case b.ep.Rank() == 0 && iters > 0:
		err = checkWhole(0, b.buf, b.size, getStamp)
	case b.ep.Rank() == 1:
		got := make([]byte, b.size)
		if err = b.reg.Load(got); err == nil {
			err = checkWhole(1, got, b.size, getStamp)
		}
	}
	return errors.Join(err, b.reg.Free())
}
