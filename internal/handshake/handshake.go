// Package handshake is the HELLO exchange that opens every connection
// between ranks (frame/spec.md, "Handshake"): both ends' HELLOs checked
// against each other (world, rank, mesh, topology, streams, sealing),
// the mesh key proven by the dialer first and then by the acceptor, over
// both nonces, and a refusal that tells a stranger nothing (REJECT with
// frame.RejectedText). What a connection becomes once it agrees (shared
// memory, a sealed stream) is the engine's medium steps', over this
// Conn's frames and keyed MAC.
//
// Lock rule: none; a Conn belongs to the goroutine that runs the
// handshake.
package handshake

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/boltmesh/boltmesh/frame"
)

// Handshake labels, so that a dialer's proof can never pass for an
// acceptor's.
const (
	labelAcceptor = "boltmesh acceptor"
	labelDialer   = "boltmesh dialer"
)

// Conn runs the HELLO exchange over a net.Conn during setup, before the
// socket is handed to the event loop. See frame/spec.md, "Handshake": the
// dialer proves the mesh key first, over both nonces; the acceptor sends
// nothing derived from the key, and no refusal reason, before that proof,
// and refuses with exactly frame.RejectedText until then.
type Conn struct {
	NC     net.Conn
	Key    []byte                // the mesh key, which the proofs and tokens are keyed with
	Self   frame.Hello           // this end's HELLO
	Raw    [frame.HelloSize]byte // our HELLO payload as sent
	Peer   [frame.HelloSize]byte // the peer's HELLO payload as received
	Theirs frame.Hello           // Peer, decoded
	proved bool                  // this end (the dialer) sent its proof
}

// New starts the handshake of nc with this end's HELLO self and the mesh
// key: self is encoded (its Nonce filled with random bytes) and nc given
// the deadline timeout from now.
func New(nc net.Conn, key []byte, self frame.Hello, timeout time.Duration) (*Conn, error) {
	hc := &Conn{NC: nc, Key: key, Self: self}
	if _, err := rand.Read(hc.Self.Nonce[:]); err != nil {
		return nil, err
	}
	hc.Self.Encode(&hc.Raw)
	return hc, nc.SetDeadline(time.Now().Add(timeout))
}

// Write writes one frame: a header of kind, flags and aux, and payload.
func (hc *Conn) Write(kind frame.Kind, flags frame.Flags, aux uint32, payload []byte) error {
	h := frame.Header{Kind: kind, Flags: flags, Aux: aux, Length: uint64(len(payload))}
	var hdr [frame.HeaderSize]byte
	h.Encode(&hdr)
	_, err := (&net.Buffers{hdr[:], payload}).WriteTo(hc.NC)
	return err
}

// Read reads one frame and requires it to be of kind with flags; a REJECT
// becomes a *Error (see refusedBy).
func (hc *Conn) Read(kind frame.Kind, flags frame.Flags) ([]byte, error) {
	_, payload, err := hc.ReadFrame(kind, flags)
	return payload, err
}

// ReadFrame is Read that returns the header too.
func (hc *Conn) ReadFrame(kind frame.Kind, flags frame.Flags) (frame.Header, []byte, error) {
	var hdr [frame.HeaderSize]byte
	if _, err := io.ReadFull(hc.NC, hdr[:]); err != nil {
		return frame.Header{}, nil, err
	}
	h, err := frame.Decode(hdr[:], frame.MaxReasonSize)
	if err != nil {
		return h, nil, err
	}
	payload := make([]byte, h.Length)
	if _, err := io.ReadFull(hc.NC, payload); err != nil {
		return h, nil, err
	}
	if h.Kind == frame.KindReject {
		return h, nil, hc.refusedBy(h.Aux, string(payload))
	}
	if h.Kind != kind || h.Flags != flags {
		return h, nil, fmt.Errorf("expected %v with flags %#x, got %v with flags %#x", kind, flags, h.Kind, h.Flags)
	}
	return h, payload, nil
}

// refusedBy is the peer's REJECT with code and reason as a
// *Error: ErrSlotTaken if the code says so, ErrWrongKey if the
// peer refused this end's proof.
func (hc *Conn) refusedBy(code uint32, reason string) error {
	he := &Error{Addr: hc.Addr(), Rank: -1, Reason: reason}
	switch {
	case code == frame.RejectSlotTaken:
		he.Err = ErrSlotTaken
	case code == frame.RejectUnproven && hc.proved:
		he.Err = ErrWrongKey
	}
	return he
}

// links is the number of connections per pair: the data streams and, in a
// full mesh, the control stream.
func (hc *Conn) links() uint16 {
	if hc.Self.Topology == frame.TopologyStar {
		return 1
	}
	return hc.Self.Streams + 1
}

// Addr is the peer's address.
func (hc *Conn) Addr() string { return hc.NC.RemoteAddr().String() }

// MAC is the mesh key's HMAC-SHA256 of label, then the dialer's and the
// acceptor's values (their HELLO payloads).
func (hc *Conn) MAC(label string, dialer, acceptor []byte) []byte {
	m := hmac.New(sha256.New, hc.Key)
	m.Write([]byte(label))
	m.Write(dialer)
	m.Write(acceptor)
	return m.Sum(nil)
}

// check validates the peer's HELLO against this rank's world and mesh,
// and returns why it does not fit, with a cause if there is a sentinel
// for it.
func (hc *Conn) check(m frame.Hello) (string, error) {
	switch {
	case m.Version != frame.Version:
		return fmt.Sprintf("protocol version %d, want %d", m.Version, frame.Version), ErrVersion
	case m.Topology != hc.Self.Topology:
		return fmt.Sprintf("topology %s, want %s", topologyName(m.Topology), topologyName(hc.Self.Topology)), nil
	case m.World != hc.Self.World:
		return fmt.Sprintf("world size %d, want %d", m.World, hc.Self.World), nil
	case max(m.Streams, 1) != hc.Self.Streams:
		return fmt.Sprintf("%d streams per pair, want %d", max(m.Streams, 1), hc.Self.Streams), nil
	case m.Stream >= hc.links():
		return fmt.Sprintf("stream %d of %d", m.Stream, hc.links()), nil
	case m.MeshID != hc.Self.MeshID:
		return "different mesh id", nil
	case m.Rank >= m.World:
		return fmt.Sprintf("rank %d outside world of %d", m.Rank, m.World), nil
	}
	if _, why := Sealing(hc.Self, m); why != "" {
		return why, nil
	}
	return "", nil
}

// checkDialer is check plus the acceptor's rules on the dialer's rank.
func (hc *Conn) checkDialer(m frame.Hello) (string, error) {
	if why, cause := hc.check(m); why != "" {
		return why, cause
	}
	switch rank := int(m.Rank); {
	case rank == int(hc.Self.Rank):
		return fmt.Sprintf("rank %d is this rank itself", rank), nil
	case rank < int(hc.Self.Rank):
		return fmt.Sprintf("rank %d is lower than %d: it accepts, it does not dial", rank, hc.Self.Rank), nil
	}
	return "", nil
}

// refuse refuses a peer that has not proven the key: it is told exactly
// frame.RejectedText; the reason and cause are only this rank's to know,
// in the returned error.
func (hc *Conn) refuse(rank int, reason string, cause error) error {
	hc.Write(frame.KindReject, 0, frame.RejectUnproven, []byte(frame.RejectedText))
	return &Error{Addr: hc.Addr(), Rank: rank, Local: true, Reason: reason, Err: cause}
}

// Dial runs the dialer's side towards the rank expected to listen there:
// HELLO, the acceptor's HELLO checked, this end's proof, the acceptor's
// proof checked.
func (hc *Conn) Dial(expect int) error {
	if err := hc.Write(frame.KindHello, 0, 0, hc.Raw[:]); err != nil {
		return err
	}
	payload, err := hc.Read(frame.KindHello, frame.FlagReply)
	if err != nil {
		return WithRank(err, expect)
	}
	m, err := frame.DecodeHello(payload)
	if err != nil {
		return hc.refuse(expect, "bad HELLO", err)
	}
	if why, cause := hc.check(m); why != "" {
		return hc.refuse(expect, why, cause)
	}
	if int(m.Rank) != expect {
		return hc.refuse(expect, fmt.Sprintf("answered as rank %d, want %d", m.Rank, expect), nil)
	}
	copy(hc.Peer[:], payload)
	hc.Theirs = m
	if err := hc.Write(frame.KindAuth, 0, 0, hc.MAC(labelDialer, hc.Raw[:], hc.Peer[:])); err != nil {
		return err
	}
	hc.proved = true
	proof, err := hc.Read(frame.KindAuth, frame.FlagReply)
	if err != nil {
		return WithRank(err, expect)
	}
	if !hmac.Equal(proof, hc.MAC(labelAcceptor, hc.Raw[:], hc.Peer[:])) {
		// Not the peer we dialed: whoever answered there holds no key or
		// another one. It is owed nothing, not even a REJECT.
		return &Error{Addr: hc.Addr(), Rank: expect, Local: true, Reason: "wrong proof of the mesh key from the acceptor", Err: ErrWrongKey}
	}
	return nil
}

// Accept runs the acceptor's side and returns the dialer's rank and
// stream. claim is called once the dialer has proven the key; it reserves
// the (rank, stream) or says why not (the slot is taken).
func (hc *Conn) Accept(claim func(rank, stream int) string) (int, int, error) {
	payload, err := hc.Read(frame.KindHello, 0)
	if err != nil {
		return -1, 0, hc.refuse(-1, "bad first frame", err)
	}
	m, err := frame.DecodeHello(payload)
	if err != nil {
		return -1, 0, hc.refuse(-1, "bad HELLO", err)
	}
	rank, stream := int(m.Rank), int(m.Stream)
	copy(hc.Peer[:], payload)
	hc.Theirs = m
	// Our HELLO goes even to a dialer that does not fit, so that a genuine
	// but misconfigured (or older) rank can tell why from it.
	if err := hc.Write(frame.KindHello, frame.FlagReply, 0, hc.Raw[:]); err != nil {
		return rank, stream, WrapRemote(hc, rank, err)
	}
	if why, cause := hc.checkDialer(m); why != "" {
		return rank, stream, hc.refuse(rank, why, cause)
	}
	proof, err := hc.Read(frame.KindAuth, 0)
	if err != nil {
		return rank, stream, WrapRemote(hc, rank, err)
	}
	if !hmac.Equal(proof, hc.MAC(labelDialer, hc.Peer[:], hc.Raw[:])) {
		return rank, stream, hc.refuse(rank, "wrong proof of the mesh key", ErrWrongKey)
	}
	if why := claim(rank, stream); why != "" {
		hc.Write(frame.KindReject, 0, frame.RejectSlotTaken, []byte(why))
		return rank, stream, &Error{Addr: hc.Addr(), Rank: rank, Local: true, Reason: why, Err: ErrSlotTaken}
	}
	return rank, stream, hc.Write(frame.KindAuth, frame.FlagReply, 0, hc.MAC(labelAcceptor, hc.Peer[:], hc.Raw[:]))
}

// WithRank sets the rank of a *Error err, if it is one.
func WithRank(err error, rank int) error {
	var he *Error
	if errors.As(err, &he) {
		he.Rank = rank
	}
	return err
}

// WrapRemote is err, an error of hc's handshake with rank, as a *Error:
// the peer's refusal with its rank set, or this end's I/O failure.
func WrapRemote(hc *Conn, rank int, err error) error {
	var he *Error
	if errors.As(err, &he) {
		he.Rank = rank
		return he
	}
	return &Error{Addr: hc.Addr(), Rank: rank, Local: true, Reason: "handshake I/O", Err: err}
}

func topologyName(t uint16) string {
	switch t {
	case frame.TopologyMesh:
		return "full mesh"
	case frame.TopologyStar:
		return "star"
	}
	return fmt.Sprintf("unknown (%d)", t)
}
