package engine

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
	"github.com/boltmesh/boltmesh/internal/link/sealed"
)

// Handshake labels, so that a dialer's proof can never pass for an
// acceptor's.
const (
	labelAcceptor = "boltmesh acceptor"
	labelDialer   = "boltmesh dialer"
)

// hsConn runs the HELLO exchange over a net.Conn during setup, before the
// socket is handed to the event loop. See frame/spec.md, "Handshake": the
// dialer proves the mesh key first, over both nonces; the acceptor sends
// nothing derived from the key, and no refusal reason, before that proof,
// and refuses with exactly frame.RejectedText until then.
type hsConn struct {
	nc     net.Conn
	o      *Options
	self   frame.Hello
	raw    [frame.HelloSize]byte // our HELLO payload as sent
	peer   [frame.HelloSize]byte // the peer's HELLO payload as received
	theirs frame.Hello           // peer, decoded
	proved bool                  // this end (the dialer) sent its proof
}

func newHsConn(nc net.Conn, t *NetTransport, stream int) (*hsConn, error) {
	o := &t.opts
	hc := &hsConn{nc: nc, o: o}
	hc.self = frame.Hello{Version: frame.Version, World: uint32(t.world), Rank: uint32(t.rank), MeshID: o.meshID()}
	if t.topo.star {
		hc.self.Topology = frame.TopologyStar
	}
	hc.self.Stream, hc.self.Streams = uint16(stream), uint16(t.opts.Streams)
	hc.self.HostID = t.topo.nbr.Host()
	hc.self.Machine = t.topo.machine
	hc.self.Seal, hc.self.Cipher = t.opts.sealFlags(nc.RemoteAddr().String()), uint8(sealed.Preferred())
	if _, err := rand.Read(hc.self.Nonce[:]); err != nil {
		return nil, err
	}
	hc.self.Encode(&hc.raw)
	return hc, nc.SetDeadline(time.Now().Add(o.HandshakeTimeout))
}

func (hc *hsConn) write(kind frame.Kind, flags frame.Flags, aux uint32, payload []byte) error {
	h := frame.Header{Kind: kind, Flags: flags, Aux: aux, Length: uint64(len(payload))}
	var hdr [frame.HeaderSize]byte
	h.Encode(&hdr)
	_, err := (&net.Buffers{hdr[:], payload}).WriteTo(hc.nc)
	return err
}

// read reads one frame and requires it to be of kind with flags; a REJECT
// becomes a *HandshakeError (see refusedBy).
func (hc *hsConn) read(kind frame.Kind, flags frame.Flags) ([]byte, error) {
	_, payload, err := hc.readFrame(kind, flags)
	return payload, err
}

// readFrame is read that returns the header too.
func (hc *hsConn) readFrame(kind frame.Kind, flags frame.Flags) (frame.Header, []byte, error) {
	var hdr [frame.HeaderSize]byte
	if _, err := io.ReadFull(hc.nc, hdr[:]); err != nil {
		return frame.Header{}, nil, err
	}
	h, err := frame.Decode(hdr[:], frame.MaxReasonSize)
	if err != nil {
		return h, nil, err
	}
	payload := make([]byte, h.Length)
	if _, err := io.ReadFull(hc.nc, payload); err != nil {
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
// *HandshakeError: ErrSlotTaken if the code says so, ErrWrongKey if the
// peer refused this end's proof.
func (hc *hsConn) refusedBy(code uint32, reason string) error {
	he := &HandshakeError{Addr: hc.addr(), Rank: -1, Reason: reason}
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
func (hc *hsConn) links() uint16 {
	if hc.self.Topology == frame.TopologyStar {
		return 1
	}
	return hc.self.Streams + 1
}

func (hc *hsConn) addr() string { return hc.nc.RemoteAddr().String() }

func (hc *hsConn) mac(label string, dialer, acceptor []byte) []byte {
	m := hmac.New(sha256.New, hc.o.MeshKey)
	m.Write([]byte(label))
	m.Write(dialer)
	m.Write(acceptor)
	return m.Sum(nil)
}

// check validates the peer's HELLO against this rank's world and mesh,
// and returns why it does not fit, with a cause if there is a sentinel
// for it.
func (hc *hsConn) check(m frame.Hello) (string, error) {
	switch {
	case m.Version != frame.Version:
		return fmt.Sprintf("protocol version %d, want %d", m.Version, frame.Version), ErrVersion
	case m.Topology != hc.self.Topology:
		return fmt.Sprintf("topology %s, want %s", topologyName(m.Topology), topologyName(hc.self.Topology)), nil
	case m.World != hc.self.World:
		return fmt.Sprintf("world size %d, want %d", m.World, hc.self.World), nil
	case max(m.Streams, 1) != hc.self.Streams:
		return fmt.Sprintf("%d streams per pair, want %d", max(m.Streams, 1), hc.self.Streams), nil
	case m.Stream >= hc.links():
		return fmt.Sprintf("stream %d of %d", m.Stream, hc.links()), nil
	case m.MeshID != hc.self.MeshID:
		return "different mesh id", nil
	case m.Rank >= m.World:
		return fmt.Sprintf("rank %d outside world of %d", m.Rank, m.World), nil
	}
	if _, why := sealing(hc.self, m); why != "" {
		return why, nil
	}
	return "", nil
}

// checkDialer is check plus the acceptor's rules on the dialer's rank.
func (hc *hsConn) checkDialer(m frame.Hello) (string, error) {
	if why, cause := hc.check(m); why != "" {
		return why, cause
	}
	switch rank := int(m.Rank); {
	case rank == int(hc.self.Rank):
		return fmt.Sprintf("rank %d is this rank itself", rank), nil
	case rank < int(hc.self.Rank):
		return fmt.Sprintf("rank %d is lower than %d: it accepts, it does not dial", rank, hc.self.Rank), nil
	}
	return "", nil
}

// refuse refuses a peer that has not proven the key: it is told exactly
// frame.RejectedText; the reason and cause are only this rank's to know,
// in the returned error.
func (hc *hsConn) refuse(rank int, reason string, cause error) error {
	hc.write(frame.KindReject, 0, frame.RejectUnproven, []byte(frame.RejectedText))
	return &HandshakeError{Addr: hc.addr(), Rank: rank, Local: true, Reason: reason, Err: cause}
}

// dial runs the dialer's side towards the rank expected to listen there:
// HELLO, the acceptor's HELLO checked, this end's proof, the acceptor's
// proof checked.
func (hc *hsConn) dial(expect int) error {
	if err := hc.write(frame.KindHello, 0, 0, hc.raw[:]); err != nil {
		return err
	}
	payload, err := hc.read(frame.KindHello, frame.FlagReply)
	if err != nil {
		return withRank(err, expect)
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
	copy(hc.peer[:], payload)
	hc.theirs = m
	if err := hc.write(frame.KindAuth, 0, 0, hc.mac(labelDialer, hc.raw[:], hc.peer[:])); err != nil {
		return err
	}
	hc.proved = true
	proof, err := hc.read(frame.KindAuth, frame.FlagReply)
	if err != nil {
		return withRank(err, expect)
	}
	if !hmac.Equal(proof, hc.mac(labelAcceptor, hc.raw[:], hc.peer[:])) {
		// Not the peer we dialed: whoever answered there holds no key or
		// another one. It is owed nothing, not even a REJECT.
		return &HandshakeError{Addr: hc.addr(), Rank: expect, Local: true, Reason: "wrong proof of the mesh key from the acceptor", Err: ErrWrongKey}
	}
	return nil
}

// accept runs the acceptor's side and returns the dialer's rank and
// stream. claim is called once the dialer has proven the key; it reserves
// the (rank, stream) or says why not (the slot is taken).
func (hc *hsConn) accept(claim func(rank, stream int) string) (int, int, error) {
	payload, err := hc.read(frame.KindHello, 0)
	if err != nil {
		return -1, 0, hc.refuse(-1, "bad first frame", err)
	}
	m, err := frame.DecodeHello(payload)
	if err != nil {
		return -1, 0, hc.refuse(-1, "bad HELLO", err)
	}
	rank, stream := int(m.Rank), int(m.Stream)
	copy(hc.peer[:], payload)
	hc.theirs = m
	// Our HELLO goes even to a dialer that does not fit, so that a genuine
	// but misconfigured (or older) rank can tell why from it.
	if err := hc.write(frame.KindHello, frame.FlagReply, 0, hc.raw[:]); err != nil {
		return rank, stream, wrapRemote(hc, rank, err)
	}
	if why, cause := hc.checkDialer(m); why != "" {
		return rank, stream, hc.refuse(rank, why, cause)
	}
	proof, err := hc.read(frame.KindAuth, 0)
	if err != nil {
		return rank, stream, wrapRemote(hc, rank, err)
	}
	if !hmac.Equal(proof, hc.mac(labelDialer, hc.peer[:], hc.raw[:])) {
		return rank, stream, hc.refuse(rank, "wrong proof of the mesh key", ErrWrongKey)
	}
	if why := claim(rank, stream); why != "" {
		hc.write(frame.KindReject, 0, frame.RejectSlotTaken, []byte(why))
		return rank, stream, &HandshakeError{Addr: hc.addr(), Rank: rank, Local: true, Reason: why, Err: ErrSlotTaken}
	}
	return rank, stream, hc.write(frame.KindAuth, frame.FlagReply, 0, hc.mac(labelAcceptor, hc.peer[:], hc.raw[:]))
}

// withRank sets the rank of a *HandshakeError err, if it is one.
func withRank(err error, rank int) error {
	var he *HandshakeError
	if errors.As(err, &he) {
		he.Rank = rank
	}
	return err
}

func wrapRemote(hc *hsConn, rank int, err error) error {
	var he *HandshakeError
	if errors.As(err, &he) {
		he.Rank = rank
		return he
	}
	return &HandshakeError{Addr: hc.addr(), Rank: rank, Local: true, Reason: "handshake I/O", Err: err}
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
