package frame

import "encoding/binary"

// Magic opens every HELLO payload: "BOLTMESH" read as a little-endian uint64.
const Magic uint64 = 0x4853454d544c4f42

// Version is the protocol version this package speaks. Version 9 sends
// HEARTBEAT on every stream of a mesh's pair that is idle, which a
// version 8 receiver refused on data streams other than 0, and watches
// each for silence (spec.md, "Liveness"); and a credited frame costs
// MsgOverhead 384 beyond its payload, not 256 (spec.md, "Flow control").
// Version 8 has a
// star's coordinator relay a long routed frame in parts (RELAY, PART),
// so that it never holds a whole payload (spec.md, "Star"). Version 7 adds
// HELLO's Seal and Cipher (8 bytes more): whether the sender seals the
// connection after the handshake (spec.md, "Sealed links"). Version 6 splits
// HELLO's last 32 bytes into the sender's machine (Machine, whose cores
// ranks count) and a 16-byte host identity (HostID), which were one
// 32-byte HostID. Version 5 pairs
// the barrier's ranks by XOR in worlds of a power of two, passes
// neighbours' barrier signals and short mailbox parts through the pair's
// memory (see spec.md, "Mailbox"), and tags WAKE. Version 4 ends a
// mesh's control-stream handshake with NEIGHBOUR, where ranks on one host
// choose shared memory (see spec.md, "Neighbours"). Version 3 has the
// collective abandon as a kind of its own (ABANDON; version 2 sent it as a
// SEND with a reserved Aux). Version 2 has the dialer prove the mesh key
// first (see spec.md, "Handshake"), and flow control and rendezvous
// ("Flow control", "Rendezvous"); version 1 had the acceptor prove first,
// to anyone who sent a HELLO.
const Version uint16 = 9

// MeshIDSize is the length of a mesh identity.
const MeshIDSize = 16

// NonceSize is the length of a handshake nonce.
const NonceSize = 32

// Topologies a HELLO announces: both ends of a connection must agree.
const (
	TopologyMesh uint16 = 0 // every pair of ranks connected directly
	TopologyStar uint16 = 1 // workers connected to a coordinator only
)

// Seal flags a HELLO carries (spec.md, "Sealed links"): what the
// sender's options say about sealing, and how it sees the connection.
const (
	SealAlways uint8 = 1 << 0 // the sender seals every TCP link but a neighbour's
	SealNever  uint8 = 1 << 1 // the sender seals nothing, and refuses a peer that must
	SealRemote uint8 = 1 << 2 // the sender sees the peer's address as not loopback
	SealKeyed  uint8 = 1 << 3 // the sender has a mesh key (auto mode seals then)
)

// Refusal codes a REJECT carries in Aux (see spec.md, "Handshake").
const (
	// RejectReason: the payload says why. Sent only to a peer that proved
	// the mesh key (and by version 1 peers, which sent every reason).
	RejectReason uint32 = 0
	// RejectUnproven: refused before the peer proved the mesh key, or
	// because its proof was wrong; the payload is exactly RejectedText.
	RejectUnproven uint32 = 1
	// RejectSlotTaken: the dialer proved the key, but the rank and stream
	// it claims are connected already; the payload says which.
	RejectSlotTaken uint32 = 2
)

// RejectedText is the whole payload of a RejectUnproven REJECT: before a
// proof of the key, a refusal says nothing more.
const RejectedText = "rejected"

// Hello is the payload of a KindHello frame.
type Hello struct {
	Version  uint16           // protocol version of the sender
	Topology uint16           // TopologyMesh or TopologyStar
	World    uint32           // world size the sender was started with
	Rank     uint32           // the sender's rank
	Stream   uint16           // which of the pair's connections this is, from 0
	Streams  uint16           // connections per pair of ranks the sender uses; 0 means 1
	MeshID   [MeshIDSize]byte // identity of the mesh the sender belongs to
	Nonce    [NonceSize]byte  // fresh random challenge for the HMAC proof
	// Machine names the kernel the sender runs on, whose cores it shares
	// with every rank of the same Machine (in any namespace): ranks count
	// those to tell whether they outnumber the cores. Zero: unknown.
	Machine [MachineIDSize]byte
	// HostID names the host the sender runs on, as far as sharing memory
	// goes: ranks whose HostIDs are equal and not zero may meet over
	// shared memory (spec.md, "Neighbours"). Zero: the sender will not.
	HostID [HostIDSize]byte
	// Seal holds the Seal flags.
	Seal uint8
	// Cipher is the AEAD the sender seals fastest with (1: AES-256-GCM,
	// 2: ChaCha20-Poly1305).
	Cipher uint8
}

// Encode writes the payload into dst.
func (m *Hello) Encode(dst *[HelloSize]byte) {
	binary.LittleEndian.PutUint64(dst[0:], Magic)
	binary.LittleEndian.PutUint16(dst[8:], m.Version)
	binary.LittleEndian.PutUint16(dst[10:], m.Topology)
	binary.LittleEndian.PutUint32(dst[12:], m.World)
	binary.LittleEndian.PutUint32(dst[16:], m.Rank)
	binary.LittleEndian.PutUint16(dst[20:], m.Stream)
	binary.LittleEndian.PutUint16(dst[22:], m.Streams)
	copy(dst[24:40], m.MeshID[:])
	copy(dst[40:72], m.Nonce[:])
	copy(dst[72:88], m.Machine[:])
	copy(dst[88:104], m.HostID[:])
	dst[104], dst[105] = m.Seal, m.Cipher
	clear(dst[106:112])
}

// DecodeHello parses a HELLO payload. It checks the magic and that the
// reserved bytes are zero; the version, topology, world, rank and streams
// are the caller's to judge.
func DecodeHello(src []byte) (Hello, error) {
	if len(src) < HelloSize {
		return Hello{}, &DecodeError{Kind: KindHello, Field: "payload", Value: uint64(len(src)), Limit: HelloSize, Err: ErrShort}
	}
	if m := binary.LittleEndian.Uint64(src); m != Magic {
		return Hello{}, &DecodeError{Kind: KindHello, Field: "magic", Value: m, Err: ErrBadMagic}
	}
	if r := src[106:HelloSize]; string(r) != "\x00\x00\x00\x00\x00\x00" {
		return Hello{}, &DecodeError{Kind: KindHello, Field: "reserved", Value: uint64(r[0]) | uint64(r[1])<<8 | uint64(r[2])<<16 | uint64(r[3])<<24 | uint64(r[4])<<32 | uint64(r[5])<<40, Err: ErrReserved}
	}
	var m Hello
	m.Version = binary.LittleEndian.Uint16(src[8:])
	m.Topology = binary.LittleEndian.Uint16(src[10:])
	m.World = binary.LittleEndian.Uint32(src[12:])
	m.Rank = binary.LittleEndian.Uint32(src[16:])
	m.Stream = binary.LittleEndian.Uint16(src[20:])
	m.Streams = binary.LittleEndian.Uint16(src[22:])
	copy(m.MeshID[:], src[24:40])
	copy(m.Nonce[:], src[40:72])
	copy(m.Machine[:], src[72:88])
	copy(m.HostID[:], src[88:104])
	m.Seal, m.Cipher = src[104], src[105]
	return m, nil
}

// GetReq is the payload of a KindGetReq frame; the header's Offset is the
// heap offset to read.
type GetReq struct {
	ID     uint64 // request id echoed in the reply's Offset field
	Length uint64 // bytes to read
}

// Encode writes the payload into dst.
func (g *GetReq) Encode(dst *[GetReqSize]byte) {
	binary.LittleEndian.PutUint64(dst[0:], g.ID)
	binary.LittleEndian.PutUint64(dst[8:], g.Length)
}

// DecodeGetReq parses a GET request payload.
func DecodeGetReq(src []byte) (GetReq, error) {
	if len(src) < GetReqSize {
		return GetReq{}, &DecodeError{Kind: KindGetReq, Field: "payload", Value: uint64(len(src)), Limit: GetReqSize, Err: ErrShort}
	}
	return GetReq{ID: binary.LittleEndian.Uint64(src), Length: binary.LittleEndian.Uint64(src[8:])}, nil
}
