package bench

// The msgrate suite measures how many messages per second pairs of ranks
// move, as OSU's osu_mbw_mr: rank i of the lower half of the world sends
// to rank i+n/2 (with an odd world the last rank idles). One iteration is
// a window of MsgRateWindow messages sent back to back by every sender,
// received in order by its partner, which then answers with one 4-byte
// acknowledgement. Result.MsgRate is the messages of every pair per
// second; busbw the bytes of every pair per second.
func init() {
	Register(&Suite{
		Name:       "msgrate",
		Doc:        "messages per second between pairs of ranks, a window at a time (osu_mbw_mr)",
		Sizes:      []int{8, 1 << 10, 64 << 10},
		QuickSizes: []int{8, 1 << 10},
		MinRanks:   2,
		Ops: []Op{{
			Name:       "mbw_mr",
			Throughput: true,
			BusFactor:  func(n int) float64 { return float64(MsgRateWindow * (n / 2)) },
			Messages:   func(n int) int { return MsgRateWindow * (n / 2) },
			Start:      startMsgRate,
		}},
	})
}

// MsgRateWindow is the number of messages a sender of the msgrate suite
// sends per iteration before it waits for its partner's acknowledgement:
// 64, OSU's default.
const MsgRateWindow = 64

// msgRate is one rank's side of a pair: a sender (partner above it) or a
// receiver (partner below it), or idle (partner -1).
type msgRate struct {
	ep      Endpoint
	size    int
	partner int
	sender  bool
	buf     []byte
	ack     [4]byte
	n       int // length of the last message received
}

func startMsgRate(c *Case) (Body, error) {
	half, r := c.EP.Ranks()/2, c.EP.Rank()
	b := &msgRate{ep: c.EP, size: c.Size, partner: -1, buf: pattern(c.Size)}
	switch {
	case r < half:
		b.partner, b.sender = r+half, true
	case r < 2*half:
		b.partner = r - half
	}
	return b, nil
}

// Iter implements Body: message j of iteration i carries stamp
// i*MsgRateWindow+j, which the receiver checks.
func (b *msgRate) Iter(i int) error {
	if b.partner < 0 {
		return nil
	}
	base := i * MsgRateWindow
	if b.sender {
		for j := range MsgRateWindow {
			stamp(b.buf, base+j)
			if err := b.ep.Send(b.partner, b.buf); err != nil {
				return err
			}
		}
		n, err := b.ep.RecvInto(b.partner, b.ack[:])
		if err == nil && n != len(b.ack) {
			return checkErr(b.ep.Rank(), "acknowledgement of window %d: %d bytes, want %d", i, n, len(b.ack))
		}
		return err
	}
	var bad error
	for j := range MsgRateWindow {
		n, err := b.ep.RecvInto(b.partner, b.buf)
		if err != nil {
			return err
		}
		b.n = n
		if err := checkMarks(b.ep.Rank(), b.buf, n, b.size, base+j); err != nil && bad == nil {
			bad = err
		}
	}
	if err := b.ep.Send(b.partner, b.ack[:]); err != nil {
		return err
	}
	return bad
}

// Finish checks the last message a receiver took completely.
func (b *msgRate) Finish(iters int) error {
	if iters == 0 || b.partner < 0 || b.sender {
		return nil
	}
	return checkWhole(b.ep.Rank(), b.buf[:b.n], b.size, iters*MsgRateWindow-1)
}
