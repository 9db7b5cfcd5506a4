package collective

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/internal/meshtest"
)

// TestAbandonCarriesCause: a rank that gives up a call for a mismatch says
// so in its abandon, and a peer whose receive the abandon reaches before
// any message of the abandoning rank fails with the cause it would have
// found in those messages: ErrLengthMismatch and ErrMismatch for lengths,
// a *MismatchError naming both calls for calls that differ. The abandon
// travels on the control stream and can overtake the data (seen in CI:
// TestAllReduceLengthsDiffer and TestCallMismatch got a bare ErrAbandoned);
// here rank 0 sends nothing but the abandon, so the order is certain.
func TestAbandonCarriesCause(t *testing.T) {
	ts := meshtest.Mesh(t, 2, engine.Options{Logger: slog.New(slog.DiscardHandler)})
	sender, subject := commOf(ts[0], Options{}), commOf(ts[1], Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cases := []struct {
		name  string
		why   uint64 // the code; rank 0's meta is added
		meta  uint32 // rank 0's call
		check func(error) bool
		want  string
	}{
		{"length", whyLength, callMeta(kindAllReduce, Float32, Sum), func(err error) bool {
			return errors.Is(err, ErrLengthMismatch) && errors.Is(err, ErrMismatch) && errors.Is(err, ErrAbandoned)
		}, "ErrLengthMismatch, ErrMismatch and ErrAbandoned"},
		{"call", whyMismatch, callMeta(kindAllReduce, Float32, Max), func(err error) bool {
			var me *MismatchError
			return errors.As(err, &me) && me.Rank == 0 && strings.Contains(me.Got, "max") && errors.Is(err, ErrAbandoned)
		}, "a *MismatchError naming rank 0's allreduce with max, and ErrAbandoned"},
		{"same call", whyMismatch, callMeta(kindAllReduce, Float32, Sum), func(err error) bool {
			var me *MismatchError
			return !errors.As(err, &me) && errors.Is(err, ErrMismatch) && errors.Is(err, ErrAbandoned)
		}, "ErrMismatch and ErrAbandoned, no *MismatchError (rank 0 mismatched with a third)"},
		{"ctx", whyOther, callMeta(kindAllReduce, Float32, Sum), func(err error) bool {
			return errors.Is(err, ErrAbandoned) && !errors.Is(err, ErrMismatch)
		}, "ErrAbandoned alone"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tag := sender.begin(kindAllReduce, Float32, Sum)
			callsOfNet(ts[0]).abandon(tag+abandonStep, tc.why|uint64(tc.meta)<<32)
			err := subject.AllReduceBytes(ctx, Float32, make([]byte, 64), Sum)
			var done error // rank 0's side is over (it said all it says)
			sender.end(&done)
			if !tc.check(err) {
				t.Fatalf("got %v, want %s", err, tc.want)
			}
		})
	}
}
