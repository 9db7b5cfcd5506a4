package bench

import (
	"context"
	"errors"
	"testing"
)

// chanEP is a two-rank Endpoint over channels for testing a body's
// checks: every message sent to rank to goes through mangle (if set)
// before it is queued.
type chanEP struct {
	rank   int
	in     [2]chan []byte // in[r]: messages to rank r
	mangle func(seq int, p []byte) []byte
	sent   int
}

func newChanPair() (*chanEP, *chanEP) {
	in := [2]chan []byte{make(chan []byte, 1024), make(chan []byte, 1024)}
	return &chanEP{rank: 0, in: in}, &chanEP{rank: 1, in: in}
}

func (e *chanEP) Impl() string { return ImplStdnet }
func (e *chanEP) Rank() int    { return e.rank }
func (e *chanEP) Ranks() int   { return 2 }
func (e *chanEP) Send(to int, p []byte) error {
	q := append([]byte(nil), p...)
	if e.mangle != nil {
		q = e.mangle(e.sent, q)
	}
	e.sent++
	e.in[to] <- q
	return nil
}
func (e *chanEP) RecvInto(from int, dst []byte) (int, error) {
	return copy(dst, <-e.in[e.rank]), nil
}
func (e *chanEP) Barrier() error                                { return nil }
func (e *chanEP) AllReduceSum(context.Context, []float32) error { return nil }
func (e *chanEP) Broadcast(context.Context, int, []byte) error  { return nil }
func (e *chanEP) NewRegion(int) (Region, error)                 { return nil, errors.ErrUnsupported }
func (e *chanEP) RPC() (RPC, error)                             { return nil, errors.ErrUnsupported }

// runMsgRate runs iters windows of the msgrate body on a channel pair
// whose sender mangles as told, and returns the receiver's first error
// (the Iter's, then Finish's).
func runMsgRate(t *testing.T, size, iters int, mangle func(seq int, p []byte) []byte) error {
	t.Helper()
	a, b := newChanPair()
	a.mangle = mangle
	sb, err := startMsgRate(&Case{EP: a, Size: size})
	if err != nil {
		t.Fatal(err)
	}
	rb, _ := startMsgRate(&Case{EP: b, Size: size})
	done := make(chan error, 1)
	go func() {
		for i := range iters {
			if err := sb.Iter(i); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	var first error
	for i := range iters {
		if err := rb.Iter(i); err != nil && first == nil {
			first = err
		}
	}
	if err := <-done; err != nil {
		t.Fatalf("sender: %v", err)
	}
	if err := rb.Finish(iters); err != nil && first == nil {
		first = err
	}
	return first
}

// TestMsgRateChecks: the receiver of the msgrate suite accepts the
// windows as sent and reports, as a check failure, a message repeated
// in place of the next, one cut short, and a corrupted byte of the last
// message (which only Finish's whole check sees).
func TestMsgRateChecks(t *testing.T) {
	const size, iters = 64, 3
	if err := runMsgRate(t, size, iters, nil); err != nil {
		t.Fatalf("clean run: %v", err)
	}
	var held []byte
	cases := map[string]func(seq int, p []byte) []byte{
		"repeated": func(seq int, p []byte) []byte {
			switch seq {
			case 70:
				held = p
				return p
			case 71:
				return append([]byte(nil), held...)
			}
			return p
		},
		"short": func(seq int, p []byte) []byte {
			if seq == 5 {
				return p[:size-1]
			}
			return p
		},
		"last corrupted": func(seq int, p []byte) []byte {
			if seq == iters*MsgRateWindow-1 {
				p[7] ^= 0xff
			}
			return p
		},
	}
	for name, mangle := range cases {
		err := runMsgRate(t, size, iters, mangle)
		var ce *CheckError
		if !errors.As(err, &ce) || !errors.Is(err, ErrCheck) || ce.Rank != 1 {
			t.Errorf("%s: got %v, want a check failure on rank 1", name, err)
		}
	}
}

// TestMsgRatePairs: ranks pair as osu_mbw_mr pairs them.
func TestMsgRatePairs(t *testing.T) {
	for _, tc := range []struct {
		n, rank, partner int
		sender           bool
	}{
		{2, 0, 1, true}, {2, 1, 0, false},
		{4, 1, 3, true}, {4, 3, 1, false},
		{5, 1, 3, true}, {5, 3, 1, false}, {5, 4, -1, false},
	} {
		b, _ := startMsgRate(&Case{EP: fixedEP{tc.rank, tc.n}, Size: 8})
		m := b.(*msgRate)
		if m.partner != tc.partner || m.sender != tc.sender {
			t.Errorf("rank %d of %d: partner %d sender %v, want %d %v", tc.rank, tc.n, m.partner, m.sender, tc.partner, tc.sender)
		}
	}
}

// fixedEP is an Endpoint that only knows its place in the world.
type fixedEP struct{ rank, n int }

func (e fixedEP) Impl() string                                  { return ImplStdnet }
func (e fixedEP) Rank() int                                     { return e.rank }
func (e fixedEP) Ranks() int                                    { return e.n }
func (e fixedEP) Send(int, []byte) error                        { return errors.ErrUnsupported }
func (e fixedEP) RecvInto(int, []byte) (int, error)             { return 0, errors.ErrUnsupported }
func (e fixedEP) Barrier() error                                { return nil }
func (e fixedEP) AllReduceSum(context.Context, []float32) error { return nil }
func (e fixedEP) Broadcast(context.Context, int, []byte) error  { return nil }
func (e fixedEP) NewRegion(int) (Region, error)                 { return nil, errors.ErrUnsupported }
func (e fixedEP) RPC() (RPC, error)                             { return nil, errors.ErrUnsupported }
