package bench

// The p2p suite: two-sided messages between ranks 0 and 1 (other ranks
// idle). pingpong times one round trip of a size-byte message; stream
// times rank 0 receiving messages that rank 1 sends back to back.
func init() {
	Register(&Suite{
		Name:       "p2p",
		Doc:        "ping-pong latency and streaming bandwidth between ranks 0 and 1",
		Sizes:      []int{8, 1 << 10, 64 << 10, 1 << 20, 16 << 20},
		QuickSizes: []int{8, 64 << 10, 1 << 20},
		MinRanks:   2,
		Ops: []Op{
			{Name: "pingpong", Start: startPingPong},
			{Name: "stream", Throughput: true, Start: startStream},
		},
	})
}

// pingpong: rank 0 sends message i, rank 1 checks it and sends it back,
// rank 0 checks the echo.
type pingpong struct {
	ep       Endpoint
	size     int
	buf      []byte
	n        int  // length of the last message received
	fullDone bool // the first message had its full check
}

func startPingPong(c *Case) (Body, error) {
	return &pingpong{ep: c.EP, size: c.Size, buf: pattern(c.Size)}, nil
}

// Iter implements Body.
func (b *pingpong) Iter(i int) error {
	var err error
	switch b.ep.Rank() {
	case 0:
		stamp(b.buf, i)
		if err = b.ep.Send(1, b.buf); err == nil {
			b.n, err = b.ep.RecvInto(1, b.buf)
		}
	case 1:
		if b.n, err = b.ep.RecvInto(0, b.buf); err == nil {
			err = b.ep.Send(0, b.buf[:b.n])
		}
	default:
		return nil
	}
	if err != nil {
		return err
	}
	return b.check(i)
}

// check verifies the marks of message i, and everything in the first one.
func (b *pingpong) check(i int) error {
	if !b.fullDone {
		b.fullDone = true
		return checkWhole(b.ep.Rank(), b.buf[:b.n], b.size, i)
	}
	return checkMarks(b.ep.Rank(), b.buf, b.n, b.size, i)
}

// Finish checks the last message completely.
func (b *pingpong) Finish(iters int) error {
	if iters == 0 || b.ep.Rank() > 1 {
		return nil
	}
	return checkWhole(b.ep.Rank(), b.buf[:b.n], b.size, iters-1)
}

// stream: rank 1 sends message i, rank 0 receives and checks it.
type stream struct{ pingpong }

func startStream(c *Case) (Body, error) {
	return &stream{pingpong{ep: c.EP, size: c.Size, buf: pattern(c.Size)}}, nil
}

// Iter implements Body.
func (b *stream) Iter(i int) error {
	switch b.ep.Rank() {
	case 0:
		var err error
		if b.n, err = b.ep.RecvInto(1, b.buf); err != nil {
			return err
		}
		return b.check(i)
	case 1:
		stamp(b.buf, i)
		return b.ep.Send(0, b.buf)
	}
	return nil
}

// Finish checks the last message received completely.
func (b *stream) Finish(iters int) error {
	if iters == 0 || b.ep.Rank() != 0 {
		return nil
	}
	return checkWhole(0, b.buf[:b.n], b.size, iters-1)
}
