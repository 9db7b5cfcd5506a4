package engine

import (
	"errors"
	"io"
	"slices"
	"testing"
)

// TestLossErrNamesFirstLoss drives a rank's loss bookkeeping as the event
// loop does (noteLoss, noteClosed with a GOODBYE's report) and checks what
// a failed collective operation's error then names.
func TestLossErrNamesFirstLoss(t *testing.T) {
	const me, world = 0, 5
	closedErr := func(r int) error {
		return &PeerError{Op: "collective", Rank: r, Err: ErrPeerLost, Cause: ErrPeerClosed}
	}
	type event struct {
		lost     int // a rank lost without GOODBYE, or -1
		closed   int // a rank that closed in order, or -1
		reported int // its GOODBYE's report
	}
	cases := []struct {
		name      string
		events    []event
		err       error
		wantRank  int
		wantCause error
		wantAfter []int
	}{
		{"no loss: the closed rank", []event{{-1, 2, -1}}, closedErr(2), 2, ErrPeerClosed, nil},
		{"reported before seen", []event{{-1, 2, 3}}, closedErr(2), 3, ErrReportedLost, []int{2}},
		{"reported, then seen", []event{{-1, 2, 3}, {3, -1, 0}}, closedErr(2), 3, io.EOF, []int{2}},
		{"seen, then closes", []event{{3, -1, 0}, {-1, 1, 3}, {-1, 2, -1}}, closedErr(1), 3, io.EOF, []int{1, 2}},
		{"first report wins", []event{{-1, 1, 3}, {-1, 2, 4}, {4, -1, 0}}, closedErr(2), 3, ErrReportedLost, []int{1, 2}},
		{"a loss error itself", []event{{3, -1, 0}}, &PeerError{Op: "recv", Rank: 3, Err: ErrPeerLost, Cause: io.EOF}, 3, io.EOF, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr := newNetTransport(me, world, Options{})
			for _, e := range tc.events {
				if e.lost >= 0 {
					tr.noteLoss(e.lost, io.EOF)
				}
				if e.closed >= 0 {
					tr.noteClosed(e.closed, 0, 0, e.reported)
				}
			}
			var pe *PeerError
			err := tr.lossErr(tc.err)
			if !errors.As(err, &pe) || !errors.Is(err, ErrPeerLost) {
				t.Fatalf("got %v, want a *PeerError wrapping ErrPeerLost", err)
			}
			if pe.Rank != tc.wantRank || !errors.Is(err, tc.wantCause) || !slices.Equal(pe.ClosedAfter, tc.wantAfter) {
				t.Errorf("got rank %d, cause %v, closed after %v; want %d, %v, %v", pe.Rank, pe.Cause, pe.ClosedAfter, tc.wantRank, tc.wantCause, tc.wantAfter)
			}
		})
	}
	t.Run("other errors pass", func(t *testing.T) {
		tr := newNetTransport(me, world, Options{})
		tr.noteLoss(3, io.EOF)
		for _, err := range []error{nil, ErrTimeout, &PeerError{Op: "recv", Rank: 2, Err: ErrClosed}} {
			if got := tr.lossErr(err); got != err {
				t.Errorf("lossErr(%v) = %v", err, got)
			}
		}
	})
}

// TestGoodbyeLost: a GOODBYE's Tag names a rank only if it can be one.
func TestGoodbyeLost(t *testing.T) {
	tr := newNetTransport(1, 4, Options{})
	for _, c := range []struct {
		from int
		tag  uint32
		want int
	}{{2, 0, -1}, {2, 1, 0}, {2, 4, 3}, {2, 5, -1}, {2, 3, -1}, {2, 2, -1}, {2, 1 << 31, -1}} {
		if got := tr.goodbyeLost(c.from, c.tag); got != c.want {
			t.Errorf("goodbyeLost(from %d, tag %d) = %d, want %d", c.from, c.tag, got, c.want)
		}
	}
}
