package frame_test

import (
	"errors"
	"testing"

	"github.com/boltmesh/boltmesh/frame"
)

// TestCost pins the flow-control cost of spec.md: the payload rounded up
// to a power of two, plus MsgOverhead.
func TestCost(t *testing.T) {
	for _, c := range []struct{ n, want uint64 }{
		{0, 384}, {1, 385}, {2, 386}, {3, 388}, {8, 392}, {9, 400},
		{4096, 4096 + 384}, {4097, 8192 + 384}, {1 << 20, 1<<20 + 384}, {1<<20 + 1, 2<<20 + 384},
		{1 << 62, 1<<62 + 384}, {1<<62 + 1, 1<<63 + 384},
	} {
		if got := frame.Cost(c.n); got != c.want {
			t.Errorf("Cost(%d) = %d, want %d", c.n, got, c.want)
		}
	}
}

func TestCredited(t *testing.T) {
	for _, k := range frame.Kinds() {
		want := k == frame.KindSend || k == frame.KindRPCReq || k == frame.KindRTS
		if got := frame.Credited(k, 0); got != want {
			t.Errorf("Credited(%v) = %v, want %v", k, got, want)
		}
	}
	if frame.Credited(frame.KindRTS, frame.FlagError) {
		t.Error("a withdrawal (RTS|Error) uses credit")
	}
}

func TestRTSPayload(t *testing.T) {
	var b [frame.RTSSize]byte
	frame.EncodeRTS(&b, 0x0102030405060708)
	if want := [frame.RTSSize]byte{8, 7, 6, 5, 4, 3, 2, 1}; b != want {
		t.Fatalf("EncodeRTS = % x, want % x (little-endian)", b, want)
	}
	if n, err := frame.DecodeRTS(b[:], 1<<60); err != nil || n != 0x0102030405060708 {
		t.Fatalf("DecodeRTS = %d, %v", n, err)
	}
	var de *frame.DecodeError
	if _, err := frame.DecodeRTS(b[:7], 0); !errors.Is(err, frame.ErrShort) || !errors.As(err, &de) || de.Field != "payload" {
		t.Fatalf("short RTS: %v", err)
	}
	frame.EncodeRTS(&b, frame.DefaultMaxLength+1)
	if _, err := frame.DecodeRTS(b[:], 0); !errors.Is(err, frame.ErrTooLarge) || !errors.As(err, &de) || de.Limit != frame.DefaultMaxLength {
		t.Fatalf("RTS above the limit: %v", err)
	}
}
