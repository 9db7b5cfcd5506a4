package collective

import "context"

// Ranks that run ahead. In a Broadcast the root, in a Gather or ReduceTo
// the ranks that only send, in a Scatter the root, finish a small call as
// soon as their sends are queued at the receivers: in a loop of such
// calls they run ahead of the others by as many calls as the receivers'
// flow-control windows hold messages (a quarter of a million of 8 B). A
// call's tags come round again every callSlots calls, and a message of a
// call more than callSlots/2 ahead reads as one of a call long over,
// which is dropped: the receiver then waited forever. So every
// keepUpEvery-th call of those kinds ends with a step that lets no rank
// finish it before every rank has begun it: no rank gets more than
// keepUpEvery calls ahead of another.

// keepUpEvery is how many calls apart the keep-up steps are.
const keepUpEvery = 8192

// keepUpStep is the keep-up step's tag, from a call's first: one the
// algorithms of those kinds never reach.
const keepUpStep = abandonStep - 1

// keepUp ends a call of a kind whose ranks may run ahead that did its own
// work with err: when the call's number is due, every rank tells rank 0
// it is here, and rank 0 answers each once it has heard from all.
func (c *Comm) keepUp(ctx context.Context, tag uint32, err error) error {
	n := c.t.WorldSize()
	if err != nil || c.seq%keepUpEvery != 0 || n == 1 {
		return err
	}
	t := tag + keepUpStep
	if c.t.Rank() != 0 {
		if err := c.send(ctx, 0, t, nil); err != nil {
			return err
		}
		m, err := c.recv(ctx, 0, t, nil)
		if err == nil {
			err = c.recvCheck(m, 0, 0)
		}
		return err
	}
	for p := 1; p < n; p++ {
		m, err := c.recv(ctx, p, t, nil)
		if err == nil {
			err = c.recvCheck(m, 0, p)
		}
		if err != nil {
			return err
		}
	}
	for p := 1; p < n; p++ {
		if err := c.send(ctx, p, t, nil); err != nil {
			return err
		}
	}
	return nil
}
