package frame_test

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/boltmesh/boltmesh/frame"
)

// allFlags is every bit of the Flags byte.
var allFlags = []frame.Flags{1 << 0, 1 << 1, 1 << 2, 1 << 3, 1 << 4, 1 << 5, 1 << 6, 1 << 7}

// allowedFlags mirrors spec.md; it is written out here so that a change to
// the package's table is caught.
var allowedFlags = map[frame.Kind]frame.Flags{
	frame.KindHello:     frame.FlagReply,
	frame.KindAuth:      frame.FlagReply,
	frame.KindReject:    0,
	frame.KindSend:      0,
	frame.KindPut:       frame.FlagMore,
	frame.KindPutAck:    frame.FlagError,
	frame.KindGetReq:    0,
	frame.KindGetReply:  frame.FlagError | frame.FlagMore,
	frame.KindRPCReq:    0,
	frame.KindRPCReply:  frame.FlagError,
	frame.KindHeartbeat: 0,
	frame.KindGoodbye:   frame.FlagReply,
	frame.KindGone:      frame.FlagError,
	frame.KindCredit:    0,
	frame.KindRTS:       frame.FlagError | frame.FlagCopy,
	frame.KindCTS:       frame.FlagError | frame.FlagCopy,
	frame.KindData:      0,
	frame.KindAbandon:   0,
	frame.KindNeighbour: frame.FlagReply,
	frame.KindWake:      0,
	frame.KindRelay:     0,
	frame.KindPart:      0,
	frame.KindDrop:      0,
}

// validLength returns a payload length kind k accepts with flags f.
func validLength(k frame.Kind, f frame.Flags) uint64 {
	switch k {
	case frame.KindHello:
		return frame.HelloSize
	case frame.KindAuth:
		return frame.MACSize
	case frame.KindGetReq:
		return frame.GetReqSize
	case frame.KindHeartbeat, frame.KindGoodbye, frame.KindGone, frame.KindCredit, frame.KindCTS, frame.KindAbandon, frame.KindWake:
		return 0
	case frame.KindRelay:
		return frame.HeaderSize
	case frame.KindRTS:
		if f&frame.FlagCopy != 0 {
			return frame.RTSCopySize
		}
		return frame.RTSSize
	case frame.KindReject, frame.KindPutAck, frame.KindNeighbour, frame.KindDrop:
		return 17
	default:
		return 4096
	}
}

func encode(h frame.Header) [frame.HeaderSize]byte {
	var b [frame.HeaderSize]byte
	h.Encode(&b)
	return b
}

func TestConstants(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want uint64
	}{
		{"HeaderSize", frame.HeaderSize, 32},
		{"HelloSize", frame.HelloSize, 112},
		{"MACSize", frame.MACSize, 32},
		{"GetReqSize", frame.GetReqSize, 16},
		{"RTSSize", frame.RTSSize, 8},
		{"MsgOverhead", frame.MsgOverhead, 384},
		{"MaxReasonSize", frame.MaxReasonSize, 1024},
		{"MachineIDSize", frame.MachineIDSize, 16},
		{"HostIDSize", frame.HostIDSize, 16},
		{"MaxNeighbour", frame.MaxNeighbour, 128},
		{"DefaultMaxLength", frame.DefaultMaxLength, 1 << 30},
		{"MeshIDSize", frame.MeshIDSize, 16},
		{"NonceSize", frame.NonceSize, 32},
		{"Version", uint64(frame.Version), 9},
		{"RejectReason", uint64(frame.RejectReason), 0},
		{"RejectUnproven", uint64(frame.RejectUnproven), 1},
		{"RejectSlotTaken", uint64(frame.RejectSlotTaken), 2},
		{"FlagReply", uint64(frame.FlagReply), 1},
		{"FlagError", uint64(frame.FlagError), 2},
		{"FlagMore", uint64(frame.FlagMore), 4},
	} {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
		}
	}
}

func TestKindValues(t *testing.T) {
	want := []struct {
		k    frame.Kind
		v    uint8
		name string
	}{
		{frame.KindHello, 1, "HELLO"},
		{frame.KindAuth, 2, "AUTH"},
		{frame.KindReject, 3, "REJECT"},
		{frame.KindSend, 4, "SEND"},
		{frame.KindPut, 5, "PUT"},
		{frame.KindPutAck, 6, "PUT_ACK"},
		{frame.KindGetReq, 7, "GET_REQ"},
		{frame.KindGetReply, 8, "GET_REPLY"},
		{frame.KindRPCReq, 9, "RPC_REQ"},
		{frame.KindRPCReply, 10, "RPC_REPLY"},
		{frame.KindHeartbeat, 11, "HEARTBEAT"},
		{frame.KindGoodbye, 12, "GOODBYE"},
		{frame.KindGone, 13, "GONE"},
		{frame.KindCredit, 15, "CREDIT"},
		{frame.KindRTS, 16, "RTS"},
		{frame.KindCTS, 17, "CTS"},
		{frame.KindData, 18, "DATA"},
		{frame.KindAbandon, 19, "ABANDON"},
		{frame.KindNeighbour, 20, "NEIGHBOUR"},
		{frame.KindWake, 21, "WAKE"},
		{frame.KindRelay, 22, "RELAY"},
		{frame.KindPart, 23, "PART"},
		{frame.KindDrop, 24, "DROP"},
	}
	kinds := frame.Kinds()
	if len(kinds) != len(want) {
		t.Fatalf("Kinds() = %v, want %d kinds", kinds, len(want))
	}
	for i, w := range want {
		if uint8(w.k) != w.v {
			t.Errorf("%s = %d, want %d", w.name, w.k, w.v)
		}
		if kinds[i] != w.k {
			t.Errorf("Kinds()[%d] = %v, want %v", i, kinds[i], w.k)
		}
		if got := w.k.String(); got != w.name {
			t.Errorf("Kind(%d).String() = %q, want %q", w.v, got, w.name)
		}
		if !w.k.Valid() {
			t.Errorf("%s.Valid() = false", w.name)
		}
	}
	for _, c := range []struct {
		k    frame.Kind
		want string
	}{{0, "KIND(0)"}, {14, "KIND(14)"}, {25, "KIND(25)"}, {200, "KIND(200)"}, {255, "KIND(255)"}} {
		if got := c.k.String(); got != c.want {
			t.Errorf("Kind(%d).String() = %q, want %q", uint8(c.k), got, c.want)
		}
		if c.k.Valid() {
			t.Errorf("Kind(%d).Valid() = true", uint8(c.k))
		}
	}
	for k := 25; k < 256; k++ {
		if frame.Kind(k).Valid() {
			t.Errorf("Kind(%d).Valid() = true", k)
		}
	}
}

// TestHeaderLayout pins every field's offset and size: each field is set to
// all ones in turn and exactly its bytes must be 0xff.
func TestHeaderLayout(t *testing.T) {
	fields := []struct {
		name      string
		set       func(*frame.Header)
		off, size int
	}{
		{"Kind", func(h *frame.Header) { h.Kind = 0xff }, 0, 1},
		{"Flags", func(h *frame.Header) { h.Flags = 0xff }, 1, 1},
		{"Dst", func(h *frame.Header) { h.Dst = math.MaxUint16 }, 2, 2},
		{"Src", func(h *frame.Header) { h.Src = math.MaxUint32 }, 4, 4},
		{"Tag", func(h *frame.Header) { h.Tag = math.MaxUint32 }, 8, 4},
		{"Aux", func(h *frame.Header) { h.Aux = math.MaxUint32 }, 12, 4},
		{"Offset", func(h *frame.Header) { h.Offset = math.MaxUint64 }, 16, 8},
		{"Length", func(h *frame.Header) { h.Length = math.MaxUint64 }, 24, 8},
	}
	covered := 0
	for _, f := range fields {
		var h frame.Header
		f.set(&h)
		b := encode(h)
		for i, c := range b {
			in := i >= f.off && i < f.off+f.size
			if in && c != 0xff || !in && c != 0 {
				t.Errorf("%s: byte %d = %#02x; encoding % x", f.name, i, c, b)
			}
		}
		covered += f.size
	}
	if covered != frame.HeaderSize {
		t.Errorf("fields cover %d bytes, HeaderSize = %d", covered, frame.HeaderSize)
	}
}

func TestHeaderGolden(t *testing.T) {
	h := frame.Header{
		Kind:   frame.KindRPCReply,
		Flags:  frame.FlagError,
		Dst:    0x0302,
		Src:    0x13121110,
		Tag:    0x23222120,
		Aux:    0x33323130,
		Offset: 0x4746454443424140,
		Length: 0x0102,
	}
	golden := [frame.HeaderSize]byte{
		0x0a, 0x02, 0x02, 0x03, // kind, flags, dst
		0x10, 0x11, 0x12, 0x13, // src
		0x20, 0x21, 0x22, 0x23, // tag
		0x30, 0x31, 0x32, 0x33, // aux
		0x40, 0x41, 0x42, 0x43, 0x44, 0x45, 0x46, 0x47, // offset
		0x02, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // length
	}
	if got := encode(h); got != golden {
		t.Fatalf("Encode:\n got % x\nwant % x", got, golden)
	}
	got, err := frame.Decode(golden[:], 0)
	if err != nil {
		t.Fatalf("Decode(golden): %v", err)
	}
	if got != h {
		t.Fatalf("Decode(golden) = %+v, want %+v", got, h)
	}
}

func TestEncodeOverwritesDst(t *testing.T) {
	b := [frame.HeaderSize]byte{}
	for i := range b {
		b[i] = 0xee
	}
	h := frame.Header{Kind: frame.KindHeartbeat}
	h.Encode(&b)
	if b[2] != 0 || b[3] != 0 {
		t.Fatalf("dst bytes = % x, want 00 00", b[2:4])
	}
	if _, err := frame.Decode(b[:], 0); err != nil {
		t.Fatalf("Decode: %v", err)
	}
}

func TestRoundTrip(t *testing.T) {
	for _, k := range frame.Kinds() {
		allowed := allowedFlags[k]
		// Every subset of the allowed flags.
		for f := frame.Flags(0); f <= allowed; f++ {
			if f&^allowed != 0 || f&(frame.FlagCopy|frame.FlagError) == frame.FlagCopy|frame.FlagError {
				continue // not allowed; Copy with Error: TestCopyFlag
			}
			h := frame.Header{
				Kind:   k,
				Flags:  f,
				Src:    0xdeadbeef,
				Tag:    math.MaxUint32,
				Aux:    7,
				Offset: math.MaxUint64 - uint64(k),
				Length: validLength(k, f),
			}
			b := encode(h)
			// Decode must read only the header: trailing bytes are ignored.
			in := append(b[:], 0xaa, 0xbb)
			got, err := frame.Decode(in, 0)
			if err != nil {
				t.Errorf("%v flags=%#x: %v", k, f, err)
				continue
			}
			if got != h {
				t.Errorf("%v flags=%#x: got %+v, want %+v", k, f, got, h)
			}
			if again := encode(got); again != b {
				t.Errorf("%v flags=%#x: re-encode % x, want % x", k, f, again, b)
			}
		}
	}
}

func TestDecodeAccepts(t *testing.T) {
	cases := []struct {
		name string
		h    frame.Header
		max  uint64
	}{
		{"AUTH|Reply empty (ready)", frame.Header{Kind: frame.KindAuth, Flags: frame.FlagReply, Length: 0}, 0},
		{"AUTH|Reply with MAC", frame.Header{Kind: frame.KindAuth, Flags: frame.FlagReply, Length: frame.MACSize}, 0},
		{"REJECT empty", frame.Header{Kind: frame.KindReject, Length: 0}, 0},
		{"REJECT at MaxReasonSize", frame.Header{Kind: frame.KindReject, Length: frame.MaxReasonSize}, 0},
		{"PUT_ACK|Error at MaxReasonSize", frame.Header{Kind: frame.KindPutAck, Flags: frame.FlagError, Length: frame.MaxReasonSize}, 0},
		{"SEND at DefaultMaxLength", frame.Header{Kind: frame.KindSend, Length: frame.DefaultMaxLength}, 0},
		{"SEND at configured max", frame.Header{Kind: frame.KindSend, Length: 1000}, 1000},
		{"SEND above default, configured higher", frame.Header{Kind: frame.KindSend, Length: frame.DefaultMaxLength + 1}, frame.DefaultMaxLength + 1},
		{"SEND max uint64 allowed", frame.Header{Kind: frame.KindSend, Length: math.MaxUint64}, math.MaxUint64},
		{"PUT empty", frame.Header{Kind: frame.KindPut, Length: 0}, 0},
		{"HELLO at exact max", frame.Header{Kind: frame.KindHello, Length: frame.HelloSize}, frame.HelloSize},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := encode(c.h)
			got, err := frame.Decode(b[:], c.max)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if got != c.h {
				t.Fatalf("got %+v, want %+v", got, c.h)
			}
		})
	}
}

type rejectCase struct {
	name  string
	in    []byte
	max   uint64
	err   error
	field string
	kind  frame.Kind
	value uint64
	limit uint64
}

func checkReject(t *testing.T, c rejectCase) {
	t.Helper()
	h, err := frame.Decode(c.in, c.max)
	if err == nil {
		t.Fatalf("Decode accepted %+v", h)
	}
	if h != (frame.Header{}) {
		t.Errorf("Decode returned non-zero header %+v with error", h)
	}
	if !errors.Is(err, c.err) {
		t.Errorf("error %v is not %v", err, c.err)
	}
	var de *frame.DecodeError
	if !errors.As(err, &de) {
		t.Fatalf("error %T %v is not a *DecodeError", err, err)
	}
	if de.Field != c.field {
		t.Errorf("Field = %q, want %q", de.Field, c.field)
	}
	if de.Kind != c.kind {
		t.Errorf("Kind = %v, want %v", de.Kind, c.kind)
	}
	if de.Value != c.value {
		t.Errorf("Value = %d, want %d", de.Value, c.value)
	}
	if de.Limit != c.limit {
		t.Errorf("Limit = %d, want %d", de.Limit, c.limit)
	}
	if de.Error() == "" {
		t.Errorf("empty Error()")
	}
}

func hdr(h frame.Header) []byte {
	b := encode(h)
	return b[:]
}

func withReserved(h frame.Header, lo, hi byte) []byte {
	b := hdr(h)
	b[2], b[3] = lo, hi
	return b
}

func TestDecodeRejects(t *testing.T) {
	send := frame.Header{Kind: frame.KindSend, Length: 10}
	cases := []rejectCase{
		// Short input.
		{name: "nil", in: nil, err: frame.ErrShort, field: "header", value: 0},
		{name: "31 bytes", in: hdr(send)[:31], err: frame.ErrShort, field: "header", value: 31},

		// Dst (bytes 2-3) only on kinds a coordinator forwards.
		{name: "dst on HELLO", in: withReserved(frame.Header{Kind: frame.KindHello, Length: frame.HelloSize}, 1, 0), err: frame.ErrReserved, field: "dst", kind: frame.KindHello, value: 1},
		{name: "dst on HEARTBEAT", in: withReserved(frame.Header{Kind: frame.KindHeartbeat}, 0, 0x80), err: frame.ErrReserved, field: "dst", kind: frame.KindHeartbeat, value: 0x8000},
		{name: "dst on GONE", in: withReserved(frame.Header{Kind: frame.KindGone}, 2, 0), err: frame.ErrReserved, field: "dst", kind: frame.KindGone, value: 2},
		{name: "kind checked before dst", in: withReserved(frame.Header{Kind: 0}, 0xff, 0xff), err: frame.ErrUnknownKind, field: "kind", kind: 0, value: 0},

		// Unknown kinds.
		{name: "kind 0", in: hdr(frame.Header{Kind: 0}), err: frame.ErrUnknownKind, field: "kind", kind: 0, value: 0},
		{name: "kind 14 (retired)", in: hdr(frame.Header{Kind: 14}), err: frame.ErrUnknownKind, field: "kind", kind: 14, value: 14},
		{name: "kind 25", in: hdr(frame.Header{Kind: 25}), err: frame.ErrUnknownKind, field: "kind", kind: 25, value: 25},
		{name: "kind 255", in: hdr(frame.Header{Kind: 255, Flags: 0xff}), err: frame.ErrUnknownKind, field: "kind", kind: 255, value: 255},

		// Bad flags (named cases; every bit of every kind is covered below).
		{name: "HELLO|Error", in: hdr(frame.Header{Kind: frame.KindHello, Flags: frame.FlagReply | frame.FlagError, Length: frame.HelloSize}), err: frame.ErrBadFlags, field: "flags", kind: frame.KindHello, value: uint64(frame.FlagError)},
		{name: "REJECT|Reply", in: hdr(frame.Header{Kind: frame.KindReject, Flags: frame.FlagReply}), err: frame.ErrBadFlags, field: "flags", kind: frame.KindReject, value: uint64(frame.FlagReply)},
		{name: "GET_REQ|More", in: hdr(frame.Header{Kind: frame.KindGetReq, Flags: frame.FlagMore, Length: frame.GetReqSize}), err: frame.ErrBadFlags, field: "flags", kind: frame.KindGetReq, value: uint64(frame.FlagMore)},
		{name: "SEND all flags", in: hdr(frame.Header{Kind: frame.KindSend, Flags: 0xff}), err: frame.ErrBadFlags, field: "flags", kind: frame.KindSend, value: 0xff},
		{name: "flags checked before length", in: hdr(frame.Header{Kind: frame.KindHeartbeat, Flags: frame.FlagReply, Length: math.MaxUint64}), err: frame.ErrBadFlags, field: "flags", kind: frame.KindHeartbeat, value: uint64(frame.FlagReply)},

		// Too large against the configured and the default maximum.
		{name: "SEND above configured max", in: hdr(frame.Header{Kind: frame.KindSend, Length: 1001}), max: 1000, err: frame.ErrTooLarge, field: "length", kind: frame.KindSend, value: 1001, limit: 1000},
		{name: "PUT above DefaultMaxLength (max 0)", in: hdr(frame.Header{Kind: frame.KindPut, Length: frame.DefaultMaxLength + 1}), err: frame.ErrTooLarge, field: "length", kind: frame.KindPut, value: frame.DefaultMaxLength + 1, limit: frame.DefaultMaxLength},
		{name: "RPC_REQ max uint64", in: hdr(frame.Header{Kind: frame.KindRPCReq, Length: math.MaxUint64}), err: frame.ErrTooLarge, field: "length", kind: frame.KindRPCReq, value: math.MaxUint64, limit: frame.DefaultMaxLength},
		{name: "HELLO above small configured max", in: hdr(frame.Header{Kind: frame.KindHello, Length: frame.HelloSize}), max: 64, err: frame.ErrTooLarge, field: "length", kind: frame.KindHello, value: frame.HelloSize, limit: 64},

		// Fixed-length kinds.
		{name: "HELLO 104 (version 6)", in: hdr(frame.Header{Kind: frame.KindHello, Length: 104}), err: frame.ErrBadLength, field: "length", kind: frame.KindHello, value: 104, limit: frame.HelloSize},
		{name: "HELLO 73", in: hdr(frame.Header{Kind: frame.KindHello, Length: 73}), err: frame.ErrBadLength, field: "length", kind: frame.KindHello, value: 73, limit: frame.HelloSize},
		{name: "HELLO|Reply empty", in: hdr(frame.Header{Kind: frame.KindHello, Flags: frame.FlagReply}), err: frame.ErrBadLength, field: "length", kind: frame.KindHello, value: 0, limit: frame.HelloSize},
		{name: "AUTH empty without Reply", in: hdr(frame.Header{Kind: frame.KindAuth}), err: frame.ErrBadLength, field: "length", kind: frame.KindAuth, value: 0, limit: frame.MACSize},
		{name: "AUTH 31", in: hdr(frame.Header{Kind: frame.KindAuth, Length: 31}), err: frame.ErrBadLength, field: "length", kind: frame.KindAuth, value: 31, limit: frame.MACSize},
		{name: "AUTH|Reply 1", in: hdr(frame.Header{Kind: frame.KindAuth, Flags: frame.FlagReply, Length: 1}), err: frame.ErrBadLength, field: "length", kind: frame.KindAuth, value: 1, limit: frame.MACSize},
		{name: "GET_REQ 15", in: hdr(frame.Header{Kind: frame.KindGetReq, Length: 15}), err: frame.ErrBadLength, field: "length", kind: frame.KindGetReq, value: 15, limit: frame.GetReqSize},
		{name: "GET_REQ 17", in: hdr(frame.Header{Kind: frame.KindGetReq, Length: 17}), err: frame.ErrBadLength, field: "length", kind: frame.KindGetReq, value: 17, limit: frame.GetReqSize},
		{name: "HEARTBEAT 1", in: hdr(frame.Header{Kind: frame.KindHeartbeat, Length: 1}), err: frame.ErrBadLength, field: "length", kind: frame.KindHeartbeat, value: 1, limit: 0},
		{name: "GOODBYE 8", in: hdr(frame.Header{Kind: frame.KindGoodbye, Length: 8}), err: frame.ErrBadLength, field: "length", kind: frame.KindGoodbye, value: 8, limit: 0},

		// Per-kind maximum below the decoder's.
		{name: "REJECT above MaxReasonSize", in: hdr(frame.Header{Kind: frame.KindReject, Length: frame.MaxReasonSize + 1}), err: frame.ErrTooLarge, field: "length", kind: frame.KindReject, value: frame.MaxReasonSize + 1, limit: frame.MaxReasonSize},
		{name: "PUT_ACK|Error above MaxReasonSize", in: hdr(frame.Header{Kind: frame.KindPutAck, Flags: frame.FlagError, Length: 4096}), err: frame.ErrTooLarge, field: "length", kind: frame.KindPutAck, value: 4096, limit: frame.MaxReasonSize},
		{name: "NEIGHBOUR above MaxNeighbour", in: hdr(frame.Header{Kind: frame.KindNeighbour, Length: frame.MaxNeighbour + 1}), err: frame.ErrTooLarge, field: "length", kind: frame.KindNeighbour, value: frame.MaxNeighbour + 1, limit: frame.MaxNeighbour},
		{name: "REJECT above configured max below MaxReasonSize", in: hdr(frame.Header{Kind: frame.KindReject, Length: 600}), max: 512, err: frame.ErrTooLarge, field: "length", kind: frame.KindReject, value: 600, limit: 512},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { checkReject(t, c) })
	}
}

// TestDecodeBadFlagsEveryKind tries every single flag bit on every kind.
func TestDecodeBadFlagsEveryKind(t *testing.T) {
	for _, k := range frame.Kinds() {
		allowed, ok := allowedFlags[k]
		if !ok {
			t.Fatalf("kind %v missing from test table", k)
		}
		for _, f := range allFlags {
			h := frame.Header{Kind: k, Flags: f, Length: validLength(k, f)}
			b := encode(h)
			if f&allowed != 0 {
				if _, err := frame.Decode(b[:], 0); err != nil {
					t.Errorf("%v flag %#x: %v", k, f, err)
				}
				continue
			}
			t.Run(fmt.Sprintf("%v/%#x", k, f), func(t *testing.T) {
				checkReject(t, rejectCase{in: b[:], err: frame.ErrBadFlags, field: "flags", kind: k, value: uint64(f)})
			})
		}
	}
}

func TestDecodeErrorString(t *testing.T) {
	_, err := frame.Decode(hdr(frame.Header{Kind: frame.KindReject, Length: 2000}), 0)
	want := "frame: payload too large: REJECT length=2000 (limit 1024)"
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %q", err, want)
	}
	_, err = frame.Decode(hdr(frame.Header{Kind: 25}), 0)
	want = "frame: unknown kind: KIND(25) kind=25"
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %q", err, want)
	}
}

func sampleHello() frame.Hello {
	m := frame.Hello{Version: frame.Version, Topology: 0x0b0a, World: 0x0c0d0e0f, Rank: 0x14151617, Stream: 0x1918, Streams: 0x1b1a}
	for i := range m.MeshID {
		m.MeshID[i] = byte(0xa0 + i)
	}
	for i := range m.Nonce {
		m.Nonce[i] = byte(0xc0 + i)
	}
	for i := range m.Machine {
		m.Machine[i] = byte(0x20 + i)
	}
	for i := range m.HostID {
		m.HostID[i] = byte(0x40 + i)
	}
	m.Seal = frame.SealAlways | frame.SealRemote | frame.SealKeyed
	m.Cipher = 2
	return m
}

func TestHelloGolden(t *testing.T) {
	m := sampleHello()
	var b [frame.HelloSize]byte
	for i := range b {
		b[i] = 0xee // Encode must overwrite every byte, reserved included
	}
	m.Encode(&b)
	var want [frame.HelloSize]byte
	copy(want[0:], "BOLTMESH")
	copy(want[8:], []byte{0x09, 0x00})              // version
	copy(want[10:], []byte{0x0a, 0x0b})             // topology
	copy(want[12:], []byte{0x0f, 0x0e, 0x0d, 0x0c}) // world
	copy(want[16:], []byte{0x17, 0x16, 0x15, 0x14}) // rank
	copy(want[20:], []byte{0x18, 0x19, 0x1a, 0x1b}) // stream, streams
	copy(want[24:40], m.MeshID[:])
	copy(want[40:72], m.Nonce[:])
	copy(want[72:88], m.Machine[:])
	copy(want[88:104], m.HostID[:])
	want[104], want[105] = 0x0d, 0x02 // seal flags, cipher; then 6 reserved zeros
	if b != want {
		t.Fatalf("Hello.Encode:\n got % x\nwant % x", b, want)
	}
	if string(b[:8]) != "BOLTMESH" {
		t.Fatalf("magic bytes = %q, want %q", b[:8], "BOLTMESH")
	}
	got, err := frame.DecodeHello(b[:])
	if err != nil {
		t.Fatalf("DecodeHello: %v", err)
	}
	if got != m {
		t.Fatalf("DecodeHello = %+v, want %+v", got, m)
	}
	// Trailing bytes are ignored.
	if got, err := frame.DecodeHello(append(b[:], 1, 2, 3)); err != nil || got != m {
		t.Fatalf("DecodeHello with trailer = %+v, %v", got, err)
	}
}

func TestHelloRejects(t *testing.T) {
	m := sampleHello()
	var good [frame.HelloSize]byte
	m.Encode(&good)
	mod := func(f func(b []byte)) []byte {
		b := append([]byte(nil), good[:]...)
		f(b)
		return b
	}
	cases := []struct {
		name  string
		in    []byte
		err   error
		field string
		value uint64
		limit uint64
	}{
		{"nil", nil, frame.ErrShort, "payload", 0, frame.HelloSize},
		{"103 bytes", good[:103], frame.ErrShort, "payload", 103, frame.HelloSize},
		{"111 bytes", good[:111], frame.ErrShort, "payload", 111, frame.HelloSize},
		{"reserved first", mod(func(b []byte) { b[106] = 0x30 }), frame.ErrReserved, "reserved", 0x30, 0},
		{"reserved last", mod(func(b []byte) { b[111] = 1 }), frame.ErrReserved, "reserved", 1 << 40, 0},
		{"bad magic", mod(func(b []byte) { copy(b, "BOLTMESX") }), frame.ErrBadMagic, "magic", 0x5853454d544c4f42, 0},
		{"zero magic", mod(func(b []byte) { copy(b, make([]byte, 8)) }), frame.ErrBadMagic, "magic", 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := frame.DecodeHello(c.in)
			if err == nil {
				t.Fatalf("DecodeHello accepted %+v", got)
			}
			if !errors.Is(err, c.err) {
				t.Errorf("error %v is not %v", err, c.err)
			}
			var de *frame.DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error %T is not a *DecodeError", err)
			}
			if de.Kind != frame.KindHello || de.Field != c.field || de.Value != c.value || de.Limit != c.limit {
				t.Errorf("got %+v, want Kind HELLO Field %q Value %#x Limit %d", *de, c.field, c.value, c.limit)
			}
		})
	}
	// The fields are not judged: version, topology, world, rank, streams, mesh id.
	for _, off := range []int{8, 9, 10, 11, 12, 20, 21, 22, 23, 15, 16, 19, 24, 39, 40, 71, 72, 103, 104, 105} {
		b := mod(func(b []byte) { b[off] ^= 0xff })
		if _, err := frame.DecodeHello(b); err != nil {
			t.Errorf("flipping byte %d: %v", off, err)
		}
	}
}

func TestGetReq(t *testing.T) {
	g := frame.GetReq{ID: 0x0706050403020100, Length: 0x1817161514131211}
	var b [frame.GetReqSize]byte
	g.Encode(&b)
	want := [frame.GetReqSize]byte{
		0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07,
		0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18,
	}
	if b != want {
		t.Fatalf("GetReq.Encode:\n got % x\nwant % x", b, want)
	}
	got, err := frame.DecodeGetReq(b[:])
	if err != nil || got != g {
		t.Fatalf("DecodeGetReq = %+v, %v; want %+v", got, err, g)
	}
	for _, n := range []int{0, 1, 15} {
		_, err := frame.DecodeGetReq(b[:n])
		if !errors.Is(err, frame.ErrShort) {
			t.Errorf("%d bytes: error %v is not ErrShort", n, err)
		}
		var de *frame.DecodeError
		if !errors.As(err, &de) {
			t.Fatalf("%d bytes: error %T is not a *DecodeError", n, err)
		}
		if de.Kind != frame.KindGetReq || de.Field != "payload" || de.Value != uint64(n) || de.Limit != frame.GetReqSize {
			t.Errorf("%d bytes: got %+v", n, *de)
		}
	}
}

var (
	sinkHeader frame.Header
	sinkErr    error
)

func TestEncodeDecodeNoAllocs(t *testing.T) {
	h := frame.Header{Kind: frame.KindSend, Src: 1, Tag: 2, Aux: 3, Offset: 4, Length: 5}
	var b [frame.HeaderSize]byte
	allocs := testing.AllocsPerRun(1000, func() {
		h.Encode(&b)
		sinkHeader, sinkErr = frame.Decode(b[:], 0)
	})
	if sinkErr != nil {
		t.Fatal(sinkErr)
	}
	if allocs != 0 {
		t.Fatalf("Encode+Decode allocated %v times per run, want 0", allocs)
	}

	m := sampleHello()
	var hb [frame.HelloSize]byte
	g := frame.GetReq{ID: 1, Length: 2}
	var gb [frame.GetReqSize]byte
	allocs = testing.AllocsPerRun(1000, func() {
		m.Encode(&hb)
		m, sinkErr = frame.DecodeHello(hb[:])
		g.Encode(&gb)
		g, _ = frame.DecodeGetReq(gb[:])
	})
	if sinkErr != nil {
		t.Fatal(sinkErr)
	}
	if allocs != 0 {
		t.Fatalf("Hello/GetReq Encode+Decode allocated %v times per run, want 0", allocs)
	}
}

func BenchmarkEncodeDecode(b *testing.B) {
	h := frame.Header{Kind: frame.KindPut, Flags: frame.FlagMore, Src: 3, Tag: 9, Aux: 1, Offset: 1 << 20, Length: 1 << 16}
	var buf [frame.HeaderSize]byte
	b.ReportAllocs()
	b.SetBytes(frame.HeaderSize)
	for b.Loop() {
		h.Aux++
		h.Encode(&buf)
		got, err := frame.Decode(buf[:], 0)
		if err != nil || got.Aux != h.Aux {
			b.Fatal(got, err)
		}
	}
}

// Guard against the test table drifting from the package's kinds.
func TestAllowedFlagsTableComplete(t *testing.T) {
	if len(allowedFlags) != len(frame.Kinds()) {
		t.Fatalf("allowedFlags has %d kinds, package defines %d", len(allowedFlags), len(frame.Kinds()))
	}
}

// TestCopyFlag pins the single copy's header rules: an RTS with Copy is
// exactly RTSCopySize bytes (and a plain one RTSSize), and Copy never
// comes with Error.
func TestCopyFlag(t *testing.T) {
	for _, c := range []rejectCase{
		{in: hdr(frame.Header{Kind: frame.KindRTS, Flags: frame.FlagCopy, Length: frame.RTSSize}), err: frame.ErrBadLength, field: "length", kind: frame.KindRTS, value: frame.RTSSize, limit: frame.RTSCopySize},
		{in: hdr(frame.Header{Kind: frame.KindRTS, Length: frame.RTSCopySize}), err: frame.ErrBadLength, field: "length", kind: frame.KindRTS, value: frame.RTSCopySize, limit: frame.RTSSize},
		{in: hdr(frame.Header{Kind: frame.KindRTS, Flags: frame.FlagCopy | frame.FlagError, Length: frame.RTSCopySize}), err: frame.ErrBadFlags, field: "flags", kind: frame.KindRTS, value: uint64(frame.FlagCopy | frame.FlagError)},
		{in: hdr(frame.Header{Kind: frame.KindCTS, Flags: frame.FlagCopy | frame.FlagError}), err: frame.ErrBadFlags, field: "flags", kind: frame.KindCTS, value: uint64(frame.FlagCopy | frame.FlagError)},
	} {
		checkReject(t, c)
	}
}
