package rpc_test

import (
	"math"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/rpc"
)

// TestWireConstants pins the values spec.md documents.
func TestWireConstants(t *testing.T) {
	if rpc.MaxNameLen != 65535 || rpc.CtlBase != 65536 || rpc.CtlGoodbye != 65537 ||
		rpc.CtlReport != 65538 || rpc.CtlVerdict != 65539 || rpc.CtlCancel != 65540 || rpc.CtlHello != 65541 {
		t.Fatal("control tags moved")
	}
	for i, st := range rpc.Statuses {
		if uint32(st) != uint32(i) {
			t.Fatalf("status %d has value %d", i, st)
		}
	}
}

func TestTimeoutMillis(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want uint32
	}{
		{-time.Second, 1}, {0, 1}, {time.Microsecond, 1}, {time.Millisecond, 1},
		{time.Millisecond + 1, 2}, {time.Minute, 60000}, {math.MaxInt64, math.MaxUint32},
	} {
		if got := rpc.TimeoutMillis(tc.d); got != tc.want {
			t.Errorf("timeoutMillis(%v) = %d, want %d", tc.d, got, tc.want)
		}
	}
}
