package collective_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/engine/collective"
)

// TestRunAhead: in a loop of small Broadcasts the root finishes each call
// as soon as its send is queued at the receiver, so it runs ahead of a
// receiver that is late. Here rank 1 begins 40000 calls late, past half
// the tags' cycle (callSlots/2 calls), where a message of a call that far
// ahead read as one of a call long over and was dropped: rank 1 then
// waited forever. Now the root may not get more than keepUpEvery calls
// ahead (8192; checked with room to spare), and every call delivers its bytes; the same for Gather's and
// ReduceTo's senders and Scatter's root.
func TestRunAhead(t *testing.T) {
	const calls = 40000
	cs := newComms(t, 2, collective.Options{})
	for _, op := range []string{"Broadcast", "Gather", "Scatter", "ReduceTo"} {
		t.Run(op, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			defer cancel()
			var ahead atomic.Int64 // calls the running-ahead rank finished
			fast := 0              // the rank that runs ahead
			if op == "Gather" || op == "ReduceTo" {
				fast = 1
			}
			err := onAll(2, func(r int) error {
				if r != fast {
					time.Sleep(200 * time.Millisecond)
					if got := ahead.Load(); got > 2*8192 {
						return fmt.Errorf("rank %d finished %d calls before rank %d began the first", fast, got, r)
					}
				}
				for k := range calls {
					v := float32(k % 1000)
					data := []float32{v, v + 1}
					if r != 0 && op != "Gather" && op != "ReduceTo" {
						data[0], data[1] = -1, -1
					}
					whole := make([]float32, 4)
					var err error
					switch op {
					case "Broadcast":
						err = collective.Broadcast(cs[r], 0, data)
					case "Gather":
						err = collective.Gather(cs[r], 0, data, whole, []int{2, 2})
					case "Scatter":
						for i := range whole {
							whole[i] = v + float32(i)
						}
						seg := data
						err = collective.Scatter(cs[r], 0, whole, seg, []int{2, 2})
						if err == nil && (seg[0] != v+float32(2*r) || seg[1] != v+float32(2*r+1)) {
							err = fmt.Errorf("call %d: rank %d's segment is %v", k, r, seg)
						}
					case "ReduceTo":
						err = collective.ReduceTo(cs[r], 0, data, collective.Sum)
					}
					if err == nil && op == "Broadcast" && (data[0] != v || data[1] != v+1) {
						err = fmt.Errorf("call %d: rank %d has %v", k, r, data)
					}
					if err == nil && op == "ReduceTo" && r == 0 && (data[0] != 2*v || data[1] != 2*v+2) {
						err = fmt.Errorf("call %d: the root's sum is %v", k, data)
					}
					if err == nil && op == "Gather" && r == 0 && (whole[0] != v || whole[3] != v+1) {
						err = fmt.Errorf("call %d: the root gathered %v", k, whole)
					}
					if err != nil {
						return fmt.Errorf("rank %d, call %d: %w", r, k, err)
					}
					if r == fast {
						ahead.Add(1)
					}
					if ctx.Err() != nil {
						return fmt.Errorf("rank %d, call %d: %w", r, k, ctx.Err())
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}
