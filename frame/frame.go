// Package frame defines boltmesh's wire format: a fixed 32-byte, little-endian
// header followed by a payload of the length the header names.
//
// The package knows bytes only. It performs no I/O and does not allocate:
// headers are encoded into caller-provided arrays and decoded into values.
// The layout is documented in spec.md beside this file and pinned by tests.
package frame

import "encoding/binary"

// HeaderSize is the size in bytes of every frame header.
const HeaderSize = 32

// Byte offsets of the header fields. Every field is little-endian and
// naturally aligned.
const (
	offKind   = 0  // uint8
	offFlags  = 1  // uint8
	offDst    = 2  // uint16
	offSrc    = 4  // uint32
	offTag    = 8  // uint32
	offAux    = 12 // uint32
	offOffset = 16 // uint64
	offLength = 24 // uint64
)

// DefaultMaxLength is the payload limit Decode applies when it is given 0.
const DefaultMaxLength = 1 << 30

// Header is a decoded frame header. What Tag, Aux and Offset hold depends
// on Kind: spec.md's table of kinds is the reference; a kind that does not
// use a field sends 0 there.
type Header struct {
	Kind  Kind   // what the frame is
	Flags Flags  // modifiers allowed for Kind
	Dst   uint16 // on a frame a star's worker sends through the coordinator, 1 + the destination rank; else 0
	Src   uint32 // rank of the sender
	// Tag is a message's tag (SEND, RTS, DATA), a tag of the collective
	// call given up (ABANDON), the RPC layer's (RPC_REQ, RPC_REPLY), or 1 +
	// the first rank the sender knew lost (GOODBYE).
	Tag uint32
	// Aux is a collective call's meta (SEND, RTS), a piece's place (DATA),
	// the RPC layer's (RPC_REQ,
	// RPC_REPLY), a refusal code (REJECT, PUT_ACK, GET_REPLY with Error),
	// or the last collective call the sender completed (GOODBYE).
	Aux uint32
	// Offset is a heap offset (PUT, GET_REQ, the refused put's in PUT_ACK),
	// a request id (GET_REPLY, RPC_REQ, RPC_REPLY), a send id (RTS, CTS,
	// DATA), the credit granted so far (CREDIT), the barriers the sender
	// completed (GOODBYE), or why the sender gave up the call (ABANDON).
	Offset uint64
	Length uint64 // payload length in bytes
}

// Encode writes h into dst. It does not validate h; Decode does that on the
// receiving side.
func (h *Header) Encode(dst *[HeaderSize]byte) {
	dst[offKind] = byte(h.Kind)
	dst[offFlags] = byte(h.Flags)
	binary.LittleEndian.PutUint16(dst[offDst:], h.Dst)
	binary.LittleEndian.PutUint32(dst[offSrc:], h.Src)
	binary.LittleEndian.PutUint32(dst[offTag:], h.Tag)
	binary.LittleEndian.PutUint32(dst[offAux:], h.Aux)
	binary.LittleEndian.PutUint64(dst[offOffset:], h.Offset)
	binary.LittleEndian.PutUint64(dst[offLength:], h.Length)
}

// Decode parses and validates the header at the start of src. maxLength
// bounds the payload length; 0 means DefaultMaxLength. Every rejection is a
// *DecodeError that wraps one of the package's sentinel errors.
func Decode(src []byte, maxLength uint64) (Header, error) {
	if len(src) < HeaderSize {
		return Header{}, &DecodeError{Field: "header", Value: uint64(len(src)), Err: ErrShort}
	}
	if maxLength == 0 {
		maxLength = DefaultMaxLength
	}
	h := Header{
		Kind:   Kind(src[offKind]),
		Flags:  Flags(src[offFlags]),
		Dst:    binary.LittleEndian.Uint16(src[offDst:]),
		Src:    binary.LittleEndian.Uint32(src[offSrc:]),
		Tag:    binary.LittleEndian.Uint32(src[offTag:]),
		Aux:    binary.LittleEndian.Uint32(src[offAux:]),
		Offset: binary.LittleEndian.Uint64(src[offOffset:]),
		Length: binary.LittleEndian.Uint64(src[offLength:]),
	}
	if err := h.validate(maxLength); err != nil {
		return Header{}, err
	}
	return h, nil
}

func (h *Header) validate(maxLength uint64) error {
	spec, ok := kindSpecOf(h.Kind)
	if !ok {
		return &DecodeError{Kind: h.Kind, Field: "kind", Value: uint64(h.Kind), Err: ErrUnknownKind}
	}
	if h.Dst != 0 && !spec.routed {
		return &DecodeError{Kind: h.Kind, Field: "dst", Value: uint64(h.Dst), Err: ErrReserved}
	}
	if bad := h.Flags &^ spec.flags; bad != 0 {
		return &DecodeError{Kind: h.Kind, Field: "flags", Value: uint64(bad), Err: ErrBadFlags}
	}
	if h.Flags&(FlagCopy|FlagError) == FlagCopy|FlagError {
		return &DecodeError{Kind: h.Kind, Field: "flags", Value: uint64(FlagCopy | FlagError), Err: ErrBadFlags}
	}
	if h.Length > maxLength {
		return &DecodeError{Kind: h.Kind, Field: "length", Value: h.Length, Limit: maxLength, Err: ErrTooLarge}
	}
	fixed := spec.fixed
	if h.Flags&FlagCopy != 0 && spec.copyLen > 0 {
		fixed = spec.copyLen
	}
	if fixed >= 0 && h.Length != uint64(fixed) && !(h.Flags&FlagReply != 0 && spec.replyEmpty && h.Length == 0) {
		return &DecodeError{Kind: h.Kind, Field: "length", Value: h.Length, Limit: uint64(fixed), Err: ErrBadLength}
	}
	if spec.max > 0 && h.Length > uint64(spec.max) {
		return &DecodeError{Kind: h.Kind, Field: "length", Value: h.Length, Limit: uint64(spec.max), Err: ErrTooLarge}
	}
	return nil
}
