package frame

import (
	"encoding/binary"
	"math/bits"
)

// Flow control. A receiver grants each sender credit in bytes (CREDIT
// frames, cumulative); the frames that a receiver may have to hold until
// its application takes them (an eager SEND, an RTS, an RPC_REQ) each use
// credit of Cost(their payload length). A sender never sends such a frame
// without the credit for it, and a receiver drops a peer that does: so
// what a peer can make a receiver hold is bounded by the credit it was
// granted. See spec.md, "Flow control".

// MsgOverhead is the credit that every credited frame uses beyond its
// payload rounded up: what holding it costs the receiver besides that
// (its header, its place in a queue, the per-tag state of a tag that
// holds nothing else, and a payload buffer's least size), about 260
// bytes for a 1-byte message on a tag of its own, with room to spare. It
// was 256 before protocol version 9, which such a message outgrew.
const MsgOverhead = 384

// Cost returns the credit a credited frame with an n-byte payload uses:
// n rounded up to a power of two (receivers hold payloads in buffers of
// power-of-two sizes) plus MsgOverhead. An RTS uses Cost(0).
func Cost(n uint64) uint64 {
	if n == 0 {
		return MsgOverhead
	}
	if n > 1<<62 {
		return 1<<63 + MsgOverhead
	}
	return 1<<bits.Len64(n-1) + MsgOverhead
}

// Credited reports whether frames of kind k use credit. (An RTS with
// FlagError withdraws an earlier one: it uses Cost(0) on the control
// stream of a full mesh, none elsewhere; see spec.md.)
func Credited(k Kind, f Flags) bool {
	switch k {
	case KindSend, KindRPCReq:
		return true
	case KindRTS:
		return f&FlagError == 0
	}
	return false
}

// EncodeRTS writes an RTS payload: the length of the message announced.
func EncodeRTS(dst *[RTSSize]byte, length uint64) {
	binary.LittleEndian.PutUint64(dst[:], length)
}

// EncodeRTSCopy writes the payload of an RTS with FlagCopy: the length of
// the message, its address in the sender's memory, and the credit the
// RTS uses: Cost(0), or Cost(length) for a message the receiver copies at
// once and holds until a receive takes it (see spec.md, "Single copy").
func EncodeRTSCopy(dst *[RTSCopySize]byte, length, addr, credit uint64) {
	binary.LittleEndian.PutUint64(dst[:], length)
	binary.LittleEndian.PutUint64(dst[8:], addr)
	binary.LittleEndian.PutUint64(dst[16:], credit)
}

// DecodeRTSCopy reads the payload of an RTS with FlagCopy, bounded as
// DecodeRTS's; a credit other than Cost(0) or Cost(length) is
// ErrBadLength ("credit"). It does not judge the address: only the
// receiver's copy can, and a bad one fails that copy, never touching the
// receiver's memory but the receive's buffer.
func DecodeRTSCopy(src []byte, maxLength uint64) (length, addr, credit uint64, err error) {
	if len(src) < RTSCopySize {
		return 0, 0, 0, &DecodeError{Kind: KindRTS, Field: "payload", Value: uint64(len(src)), Limit: RTSCopySize, Err: ErrShort}
	}
	if length, err = DecodeRTS(src, maxLength); err != nil {
		return 0, 0, 0, err
	}
	credit = binary.LittleEndian.Uint64(src[16:])
	if credit != Cost(0) && credit != Cost(length) {
		return 0, 0, 0, &DecodeError{Kind: KindRTS, Field: "credit", Value: credit, Limit: Cost(length), Err: ErrBadLength}
	}
	return length, binary.LittleEndian.Uint64(src[8:]), credit, nil
}

// DecodeRTS reads an RTS payload. maxLength bounds the message length, as
// Decode's bounds a payload (0: DefaultMaxLength).
func DecodeRTS(src []byte, maxLength uint64) (uint64, error) {
	if len(src) < RTSSize {
		return 0, &DecodeError{Kind: KindRTS, Field: "payload", Value: uint64(len(src)), Limit: RTSSize, Err: ErrShort}
	}
	if maxLength == 0 {
		maxLength = DefaultMaxLength
	}
	n := binary.LittleEndian.Uint64(src)
	if n > maxLength {
		return 0, &DecodeError{Kind: KindRTS, Field: "message length", Value: n, Limit: maxLength, Err: ErrTooLarge}
	}
	return n, nil
}
