package frame_test

import (
	"bytes"
	"errors"
	"math"
	"testing"

	"github.com/boltmesh/boltmesh/frame"
)

var sentinels = []error{
	frame.ErrShort, frame.ErrUnknownKind, frame.ErrBadFlags, frame.ErrReserved,
	frame.ErrTooLarge, frame.ErrBadLength, frame.ErrBadMagic,
}

// checkDecodeErr fails unless err is a *DecodeError wrapping a sentinel.
func checkDecodeErr(t *testing.T, what string, err error) {
	t.Helper()
	var de *frame.DecodeError
	if !errors.As(err, &de) {
		t.Fatalf("%s: error %T %v is not a *DecodeError", what, err, err)
	}
	for _, s := range sentinels {
		if errors.Is(err, s) {
			return
		}
	}
	t.Fatalf("%s: error %v wraps no sentinel", what, err)
}

func FuzzDecode(f *testing.F) {
	// One valid frame per kind, with its payload where it has a layout.
	hello := sampleHello()
	var hb [frame.HelloSize]byte
	hello.Encode(&hb)
	var gb [frame.GetReqSize]byte
	(&frame.GetReq{ID: 42, Length: 4096}).Encode(&gb)
	for _, k := range frame.Kinds() {
		fl := allowedFlags[k] &^ frame.FlagCopy // Copy never with Error
		h := frame.Header{Kind: k, Flags: fl, Src: 1, Tag: 2, Aux: 3, Offset: 4, Length: validLength(k, fl)}
		b := encode(h)
		in := b[:]
		switch k {
		case frame.KindHello:
			in = append(in, hb[:]...)
		case frame.KindGetReq:
			in = append(in, gb[:]...)
		}
		f.Add(in)
	}
	// Malformed seeds.
	f.Add([]byte{})
	f.Add(hdr(frame.Header{Kind: frame.KindSend})[:31])
	f.Add(hdr(frame.Header{Kind: 0}))
	f.Add(hdr(frame.Header{Kind: 255, Flags: 0xff, Length: math.MaxUint64}))
	f.Add(withReserved(frame.Header{Kind: frame.KindSend}, 1, 0))
	f.Add(hdr(frame.Header{Kind: frame.KindAuth, Flags: frame.FlagReply}))
	f.Add(hdr(frame.Header{Kind: frame.KindReject, Length: frame.MaxReasonSize + 1}))
	f.Add(hdr(frame.Header{Kind: frame.KindHello, Length: 71}))
	f.Add(hb[:])

	maxes := []uint64{0, 1, frame.HelloSize, 1 << 20, math.MaxUint64}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, max := range maxes {
			h, err := frame.Decode(data, max)
			if err != nil {
				checkDecodeErr(t, "Decode", err)
				continue
			}
			if !h.Kind.Valid() {
				t.Fatalf("Decode accepted kind %v", h.Kind)
			}
			limit := max
			if limit == 0 {
				limit = frame.DefaultMaxLength
			}
			if h.Length > limit {
				t.Fatalf("Decode accepted length %d above max %d", h.Length, limit)
			}
			var b [frame.HeaderSize]byte
			h.Encode(&b)
			if !bytes.Equal(b[:], data[:frame.HeaderSize]) {
				t.Fatalf("re-encode mismatch:\n in % x\nout % x", data[:frame.HeaderSize], b)
			}
		}
		payloads := [][]byte{data}
		if len(data) > frame.HeaderSize {
			payloads = append(payloads, data[frame.HeaderSize:])
		}
		for _, p := range payloads {
			checkHello(t, p)
			g, err := frame.DecodeGetReq(p)
			if err != nil {
				checkDecodeErr(t, "DecodeGetReq", err)
				continue
			}
			var b [frame.GetReqSize]byte
			g.Encode(&b)
			if !bytes.Equal(b[:], p[:frame.GetReqSize]) {
				t.Fatalf("GetReq re-encode mismatch:\n in % x\nout % x", p[:frame.GetReqSize], b)
			}
		}
	})
}

func checkHello(t *testing.T, p []byte) {
	t.Helper()
	m, err := frame.DecodeHello(p)
	if err != nil {
		checkDecodeErr(t, "DecodeHello", err)
		return
	}
	var b [frame.HelloSize]byte
	m.Encode(&b)
	if !bytes.Equal(b[:], p[:frame.HelloSize]) {
		t.Fatalf("Hello re-encode mismatch:\n in % x\nout % x", p[:frame.HelloSize], b)
	}
}

// FuzzHello fuzzes HELLO payloads alone. (It is not named FuzzDecodeHello so
// that -fuzz=FuzzDecode matches exactly one target.)
func FuzzHello(f *testing.F) {
	m := sampleHello()
	var b [frame.HelloSize]byte
	m.Encode(&b)
	f.Add(b[:])
	f.Add(b[:71])
	bad := b
	bad[0] = 'X'
	f.Add(bad[:])
	bad = b
	bad[21] = 1
	f.Add(bad[:])
	f.Fuzz(func(t *testing.T, data []byte) { checkHello(t, data) })
}
