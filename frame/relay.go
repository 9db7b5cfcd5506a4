package frame

// EncodeRelay writes into dst the payload of the RELAY that announces h,
// a routed frame from worker src relayed in parts: h as the destination
// will take it, with Dst 0 and Src src.
func EncodeRelay(dst *[HeaderSize]byte, h *Header, src uint32) {
	r := *h
	r.Dst, r.Src = 0, src
	r.Encode(dst)
}

// DecodeRelay reads the payload of a RELAY from worker src: the header of
// the frame whose parts follow. It checks that header as Decode does
// (maxLength bounds its payload, 0: DefaultMaxLength), and that it is a
// routed kind with a payload longer than zero, addressed to the receiver
// (Dst 0) and from src.
func DecodeRelay(payload []byte, src uint32, maxLength uint64) (Header, error) {
	if len(payload) != HeaderSize {
		return Header{}, &DecodeError{Kind: KindRelay, Field: "payload", Value: uint64(len(payload)), Limit: HeaderSize, Err: ErrBadLength}
	}
	h, err := Decode(payload, maxLength)
	switch {
	case err != nil:
		return Header{}, err
	case !h.Kind.Routed():
		return Header{}, &DecodeError{Kind: KindRelay, Field: "relayed kind", Value: uint64(h.Kind), Err: ErrBadRelay}
	case h.Dst != 0:
		return Header{}, &DecodeError{Kind: KindRelay, Field: "relayed dst", Value: uint64(h.Dst), Err: ErrBadRelay}
	case h.Src != src:
		return Header{}, &DecodeError{Kind: KindRelay, Field: "relayed src", Value: uint64(h.Src), Err: ErrBadRelay}
	case h.Length == 0:
		return Header{}, &DecodeError{Kind: KindRelay, Field: "relayed length", Err: ErrBadRelay}
	}
	return h, nil
}

// Routed reports whether a star's coordinator forwards frames of kind k
// between workers (a frame of it may carry Dst).
func (k Kind) Routed() bool {
	s, ok := kindSpecOf(k)
	return ok && s.routed
}
