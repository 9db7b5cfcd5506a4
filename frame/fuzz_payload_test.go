package frame_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"math/bits"
	"testing"

	"github.com/boltmesh/boltmesh/frame"
)

// requireDecodeErr fails unless err is a *DecodeError with exactly these
// fields wrapping sentinel.
func requireDecodeErr(t *testing.T, what string, err, sentinel error, want frame.DecodeError) {
	t.Helper()
	var de *frame.DecodeError
	if !errors.As(err, &de) || !errors.Is(err, sentinel) {
		t.Fatalf("%s: error %v (%T), want a *DecodeError wrapping %v", what, err, err, sentinel)
	}
	want.Err = de.Err
	if *de != want {
		t.Fatalf("%s: got %+v, want %+v", what, *de, want)
	}
}

// FuzzGetReq fuzzes GET_REQ payloads: fewer than GetReqSize bytes are
// ErrShort naming the payload's length; anything longer decodes to the
// two little-endian words of its first 16 bytes, which re-encode to them,
// whatever follows.
func FuzzGetReq(f *testing.F) {
	var b [frame.GetReqSize]byte
	(&frame.GetReq{ID: 42, Length: 4096}).Encode(&b)
	f.Add(b[:])
	f.Add(b[:15])
	f.Add([]byte{})
	f.Add(append(b[:], 0xff))
	(&frame.GetReq{ID: math.MaxUint64, Length: math.MaxUint64}).Encode(&b)
	f.Add(b[:])
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := frame.DecodeGetReq(data)
		if len(data) < frame.GetReqSize {
			requireDecodeErr(t, "DecodeGetReq", err, frame.ErrShort, frame.DecodeError{Kind: frame.KindGetReq, Field: "payload", Value: uint64(len(data)), Limit: frame.GetReqSize})
			return
		}
		if err != nil {
			t.Fatalf("DecodeGetReq of %d bytes: %v", len(data), err)
		}
		if g.ID != binary.LittleEndian.Uint64(data) || g.Length != binary.LittleEndian.Uint64(data[8:]) {
			t.Fatalf("DecodeGetReq(% x) = %+v", data[:frame.GetReqSize], g)
		}
		var out [frame.GetReqSize]byte
		g.Encode(&out)
		if !bytes.Equal(out[:], data[:frame.GetReqSize]) {
			t.Fatalf("re-encode mismatch:\n in % x\nout % x", data[:frame.GetReqSize], out)
		}
	})
}

// FuzzRTS fuzzes RTS payloads under several limits: fewer than RTSSize
// bytes are ErrShort; a length above the limit (0: DefaultMaxLength) is
// ErrTooLarge naming it; any other decodes to the little-endian word and
// re-encodes to it. It also checks frame.Cost, the credit a receiver
// charges for the length: MsgOverhead plus the least power of two at
// least the length (plus nothing for 0), for every length a decoder can
// pass.
func FuzzRTS(f *testing.F) {
	var b [frame.RTSSize]byte
	for _, n := range []uint64{0, 1, 4096, 1<<20 + 1, frame.DefaultMaxLength, frame.DefaultMaxLength + 1, 1 << 62, 1<<62 + 1, math.MaxUint64} {
		frame.EncodeRTS(&b, n)
		f.Add(b[:])
	}
	f.Add(b[:7])
	f.Add([]byte{})
	f.Add(append(b[:], 1, 2, 3))
	maxes := []uint64{0, 1, 4096, 1 << 20, 1 << 62, math.MaxUint64}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, max := range maxes {
			n, err := frame.DecodeRTS(data, max)
			limit := max
			if limit == 0 {
				limit = frame.DefaultMaxLength
			}
			switch {
			case len(data) < frame.RTSSize:
				requireDecodeErr(t, "DecodeRTS", err, frame.ErrShort, frame.DecodeError{Kind: frame.KindRTS, Field: "payload", Value: uint64(len(data)), Limit: frame.RTSSize})
				continue
			case binary.LittleEndian.Uint64(data) > limit:
				requireDecodeErr(t, "DecodeRTS", err, frame.ErrTooLarge, frame.DecodeError{Kind: frame.KindRTS, Field: "message length", Value: binary.LittleEndian.Uint64(data), Limit: limit})
				continue
			}
			if err != nil || n != binary.LittleEndian.Uint64(data) {
				t.Fatalf("DecodeRTS(% x, %d) = %d, %v", data[:frame.RTSSize], max, n, err)
			}
			var out [frame.RTSSize]byte
			frame.EncodeRTS(&out, n)
			if !bytes.Equal(out[:], data[:frame.RTSSize]) {
				t.Fatalf("re-encode mismatch:\n in % x\nout % x", data[:frame.RTSSize], out)
			}
			if n <= 1<<62 {
				checkCost(t, n)
			}
		}
	})
}

// checkCost checks frame.Cost(n) for n <= 2^62.
func checkCost(t *testing.T, n uint64) {
	t.Helper()
	c := frame.Cost(n)
	if c < frame.MsgOverhead {
		t.Fatalf("Cost(%d) = %d, below MsgOverhead", n, c)
	}
	p := c - frame.MsgOverhead
	switch {
	case n == 0 && p != 0:
		t.Fatalf("Cost(0) = %d, want MsgOverhead", c)
	case n > 0 && (bits.OnesCount64(p) != 1 || p < n || p/2 >= n):
		t.Fatalf("Cost(%d) = %d: %d is not the least power of two >= %d", n, c, p, n)
	}
}

// FuzzRTSCopy fuzzes the payloads of RTSs with Copy: fewer than
// RTSCopySize bytes are ErrShort; a length above the limit ErrTooLarge,
// as DecodeRTS's; a credit other than Cost(0) or Cost(length)
// ErrBadLength naming "credit"; any other decodes to its three words and
// re-encodes to them.
func FuzzRTSCopy(f *testing.F) {
	var b [frame.RTSCopySize]byte
	for _, n := range []uint64{0, 1, 256 << 10, 1 << 20, frame.DefaultMaxLength + 1} {
		frame.EncodeRTSCopy(&b, n, 0x7f0000001000, frame.Cost(n))
		f.Add(b[:])
		frame.EncodeRTSCopy(&b, n, 0x7f0000001000, frame.Cost(0))
		f.Add(b[:])
	}
	frame.EncodeRTSCopy(&b, 4096, 1, 12345)
	f.Add(b[:])
	f.Add(b[:23])
	maxes := []uint64{0, 4096, 1 << 62}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, max := range maxes {
			n, addr, credit, err := frame.DecodeRTSCopy(data, max)
			limit := max
			if limit == 0 {
				limit = frame.DefaultMaxLength
			}
			switch {
			case len(data) < frame.RTSCopySize:
				requireDecodeErr(t, "DecodeRTSCopy", err, frame.ErrShort, frame.DecodeError{Kind: frame.KindRTS, Field: "payload", Value: uint64(len(data)), Limit: frame.RTSCopySize})
				continue
			case binary.LittleEndian.Uint64(data) > limit:
				requireDecodeErr(t, "DecodeRTSCopy", err, frame.ErrTooLarge, frame.DecodeError{Kind: frame.KindRTS, Field: "message length", Value: binary.LittleEndian.Uint64(data), Limit: limit})
				continue
			}
			want := binary.LittleEndian.Uint64(data)
			if c := binary.LittleEndian.Uint64(data[16:]); c != frame.Cost(0) && c != frame.Cost(want) {
				requireDecodeErr(t, "DecodeRTSCopy", err, frame.ErrBadLength, frame.DecodeError{Kind: frame.KindRTS, Field: "credit", Value: c, Limit: frame.Cost(want)})
				continue
			}
			if err != nil || n != want {
				t.Fatalf("DecodeRTSCopy(% x, %d) = %d, %v", data[:frame.RTSCopySize], max, n, err)
			}
			var out [frame.RTSCopySize]byte
			frame.EncodeRTSCopy(&out, n, addr, credit)
			if !bytes.Equal(out[:], data[:frame.RTSCopySize]) {
				t.Fatalf("re-encode mismatch:\n in % x\nout % x", data[:frame.RTSCopySize], out)
			}
		}
	})
}

// FuzzRelay fuzzes RELAY payloads, from worker src under a limit: a
// payload that is not exactly HeaderSize bytes is ErrBadLength; one that
// decodes is a routed kind, not empty, to the receiver, from src, within
// the limit, and re-encodes (EncodeRelay) to the same bytes; any other is
// a *DecodeError.
func FuzzRelay(f *testing.F) {
	var b [frame.HeaderSize]byte
	h := frame.Header{Kind: frame.KindData, Src: 3, Tag: 9, Aux: 1 << 16, Offset: 7, Length: 16 << 20}
	frame.EncodeRelay(&b, &h, 3)
	f.Add(b[:], uint32(3), uint64(0))
	f.Add(b[:], uint32(4), uint64(0))
	f.Add(b[:], uint32(3), uint64(1<<20))
	f.Add(b[:31], uint32(3), uint64(0))
	h.Kind, h.Tag, h.Aux, h.Offset = frame.KindPut, 0, 0, 1<<20
	frame.EncodeRelay(&b, &h, 3)
	f.Add(b[:], uint32(3), uint64(0))
	h.Kind, h.Length = frame.KindHeartbeat, 0
	frame.EncodeRelay(&b, &h, 3)
	f.Add(b[:], uint32(3), uint64(0))
	f.Fuzz(func(t *testing.T, data []byte, src uint32, limit uint64) {
		h, err := frame.DecodeRelay(data, src, limit)
		if len(data) != frame.HeaderSize {
			requireDecodeErr(t, "DecodeRelay", err, frame.ErrBadLength, frame.DecodeError{Kind: frame.KindRelay, Field: "payload", Value: uint64(len(data)), Limit: frame.HeaderSize})
			return
		}
		if err != nil {
			var de *frame.DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("DecodeRelay: %v (%T), want a *DecodeError", err, err)
			}
			return
		}
		if limit == 0 {
			limit = frame.DefaultMaxLength
		}
		if h.Src != src || h.Dst != 0 || h.Length == 0 || h.Length > limit || !h.Kind.Routed() {
			t.Fatalf("DecodeRelay(% x, %d, %d) = %+v", data, src, limit, h)
		}
		var out [frame.HeaderSize]byte
		frame.EncodeRelay(&out, &h, src)
		if !bytes.Equal(out[:], data) {
			t.Fatalf("re-encode mismatch:\n in % x\nout % x", data, out)
		}
	})
}

// TestRelay pins DecodeRelay's refusals, each with its field.
func TestRelay(t *testing.T) {
	var b [frame.HeaderSize]byte
	for _, c := range []struct {
		name  string
		h     frame.Header
		src   uint32
		field string
		err   error
	}{
		{name: "not routed", h: frame.Header{Kind: frame.KindHeartbeat, Src: 2}, src: 2, field: "relayed kind", err: frame.ErrBadRelay},
		{name: "relay of a relay", h: frame.Header{Kind: frame.KindRelay, Src: 2, Length: frame.HeaderSize}, src: 2, field: "relayed kind", err: frame.ErrBadRelay},
		{name: "other source", h: frame.Header{Kind: frame.KindSend, Src: 5, Length: 1 << 20}, src: 2, field: "relayed src", err: frame.ErrBadRelay},
		{name: "empty", h: frame.Header{Kind: frame.KindSend, Src: 2}, src: 2, field: "relayed length", err: frame.ErrBadRelay},
		{name: "too long", h: frame.Header{Kind: frame.KindSend, Src: 2, Length: frame.DefaultMaxLength + 1}, src: 2, field: "length", err: frame.ErrTooLarge},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.h.Encode(&b)
			_, err := frame.DecodeRelay(b[:], c.src, 0)
			var de *frame.DecodeError
			if !errors.Is(err, c.err) || !errors.As(err, &de) || de.Field != c.field {
				t.Fatalf("DecodeRelay: %v, want %v on field %q", err, c.err, c.field)
			}
		})
	}
	h := frame.Header{Kind: frame.KindSend, Dst: 9, Src: 1, Tag: 4, Length: 1 << 20}
	frame.EncodeRelay(&b, &h, 2)
	got, err := frame.DecodeRelay(b[:], 2, 0)
	if want := (frame.Header{Kind: frame.KindSend, Src: 2, Tag: 4, Length: 1 << 20}); err != nil || got != want {
		t.Fatalf("DecodeRelay(EncodeRelay(%+v, 2)) = %+v, %v; want %+v", h, got, err, want)
	}
}
