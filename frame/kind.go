package frame

import "strconv"

// Kind says what a frame is. Values are part of the wire format and never
// change meaning; new kinds take new values.
type Kind uint8

// Frame kinds. See spec.md for each kind's use of the header fields.
const (
	KindHello     Kind = 1  // handshake: protocol, world, rank, mesh id, nonce
	KindAuth      Kind = 2  // handshake: HMAC proof of the mesh key; ready when Reply
	KindReject    Kind = 3  // handshake refused; Aux: refusal code; payload: the reason text
	KindSend      Kind = 4  // tagged two-sided message
	KindPut       Kind = 5  // one-sided write into the target's heap at Offset
	KindPutAck    Kind = 6  // refusal of a PUT (Error flag, reason text; Aux: refusal code; Offset: the put's)
	KindGetReq    Kind = 7  // one-sided read request of the heap at Offset: payload {request id, length}
	KindGetReply  Kind = 8  // reply to a GetReq; Offset is the request id
	KindRPCReq    Kind = 9  // RPC request; Offset is the request id
	KindRPCReply  Kind = 10 // RPC reply; Offset is the request id
	KindHeartbeat Kind = 11 // liveness probe, no payload
	KindGoodbye   Kind = 12 // orderly close; Offset: barriers the sender completed; Aux: its last collective call; Tag: 1 + the first rank it knew lost, or 0; Reply: the answer
	KindGone      Kind = 13 // star: the coordinator tells a worker that rank Src left
	// 14 was STRIPE (protocol version 1): retired.
	KindCredit  Kind = 15 // flow control: Offset is the credit granted so far, in bytes
	KindRTS     Kind = 16 // rendezvous: a large SEND is ready; Offset: send id; payload: its length
	KindCTS     Kind = 17 // rendezvous: send the message now (Error: send nothing); Offset: send id
	KindData    Kind = 18 // rendezvous: (a piece of) the message; Offset: send id; Aux: piece
	KindAbandon Kind = 19 // the sender gave up the collective call that owns Tag; Offset: why
	// KindNeighbour is the handshake's last step on a mesh's control
	// stream between ranks whose HELLOs name the same host: where the
	// acceptor's neighbours meet it (empty: nowhere); Reply: the dialer's
	// choice of link (Aux: NeighbourPipes or NeighbourTCP).
	KindNeighbour Kind = 20
	// KindWake tells a neighbour asleep on the pair's mailbox that this
	// rank wrote its part of an exchange there (see spec.md "Mailbox").
	KindWake Kind = 21
	// KindRelay comes from a star's coordinator, ahead of the parts of a
	// routed frame it relays in parts: its payload is that frame's header
	// (HeaderSize bytes, Length the whole payload's), Src the worker it
	// comes from (see spec.md "Star", version 8).
	KindRelay Kind = 22
	// KindPart is a part of the payload of the frame a RELAY from the
	// same Src announced; Offset: where the part starts in that payload.
	KindPart Kind = 23
	// KindDrop is a rank's last word to a peer it drops for a fault it
	// found on their link, written on each of the link's streams before
	// it ends them: Aux the fault (DropTampered, ...), Offset the stream
	// it was found on, the payload its words (see spec.md "Liveness",
	// version 9).
	KindDrop Kind = 24
)

// The faults a DROP's Aux names.
const (
	DropTampered    uint32 = 1 // a sealed record that did not authenticate
	DropSilent      uint32 = 2 // nothing heard on a stream for 4 KeepAlive periods
	DropProtocol    uint32 = 3 // a frame the protocol does not allow there
	DropFlowControl uint32 = 4 // a frame beyond the credit granted
	DropNotReading  uint32 = 5 // a star's worker that read nothing of what waited for it
	DropSingleCopy  uint32 = 6 // a neighbour's memory a single copy failed to read
)

// Flags modify a frame. Each kind allows a subset; Decode rejects the rest.
type Flags uint8

// Frame flags.
const (
	FlagReply Flags = 1 << 0 // the frame answers one of the same kind (handshake, GOODBYE)
	FlagError Flags = 1 << 1 // the payload is an error text instead of data
	FlagMore  Flags = 1 << 2 // a fragment: more frames of the same message follow
	// FlagCopy marks the single copy between neighbours: an RTS that also
	// names where the message lies in the sender's memory (payload
	// RTSCopySize), and the CTS of a receiver that copied it from there
	// itself (send no DATA). Never with FlagError.
	FlagCopy Flags = 1 << 3
)

// Fixed payload sizes of the handshake and request kinds.
const (
	HelloSize     = 112  // payload of KindHello
	MACSize       = 32   // payload of KindAuth: HMAC-SHA256
	GetReqSize    = 16   // payload of KindGetReq
	RTSSize       = 8    // payload of KindRTS: the message length
	RTSCopySize   = 24   // payload of KindRTS with FlagCopy: the length, the address, the credit used
	MaxReasonSize = 1024 // longest KindReject payload
	MachineIDSize = 16   // a machine (kernel) identity, in HELLO
	HostIDSize    = 16   // a host identity, in HELLO
	MaxNeighbour  = 128  // longest KindNeighbour payload: a meeting address
)

// The dialer's choice in a NEIGHBOUR reply's Aux.
const (
	NeighbourTCP   uint32 = 0 // the pair's frames go over its TCP streams
	NeighbourPipes uint32 = 1 // the pair's frames go over pipes in shared memory
)

type kindSpec struct {
	name       string
	flags      Flags // allowed flags
	fixed      int   // exact payload length, or -1 for any
	replyEmpty bool  // with FlagReply the payload may also be empty
	max        int   // upper bound on payload length below the decoder's, or 0
	copyLen    int   // with FlagCopy the payload is exactly this long instead of fixed
	routed     bool  // a star's coordinator may forward it (Dst may be set)
}

var kindSpecs = [...]kindSpec{
	KindHello:     {name: "HELLO", flags: FlagReply, fixed: HelloSize},
	KindAuth:      {name: "AUTH", flags: FlagReply, fixed: MACSize, replyEmpty: true},
	KindReject:    {name: "REJECT", fixed: -1, max: MaxReasonSize},
	KindSend:      {name: "SEND", fixed: -1, routed: true},
	KindPut:       {name: "PUT", flags: FlagMore, fixed: -1, routed: true},
	KindPutAck:    {name: "PUT_ACK", flags: FlagError, fixed: -1, max: MaxReasonSize, routed: true},
	KindGetReq:    {name: "GET_REQ", fixed: GetReqSize, routed: true},
	KindGetReply:  {name: "GET_REPLY", flags: FlagError | FlagMore, fixed: -1, routed: true},
	KindRPCReq:    {name: "RPC_REQ", fixed: -1, routed: true},
	KindRPCReply:  {name: "RPC_REPLY", flags: FlagError, fixed: -1, routed: true},
	KindHeartbeat: {name: "HEARTBEAT", fixed: 0},
	KindGoodbye:   {name: "GOODBYE", flags: FlagReply, fixed: 0, routed: true},
	KindGone:      {name: "GONE", flags: FlagError, fixed: 0},
	KindCredit:    {name: "CREDIT", fixed: 0, routed: true},
	KindRTS:       {name: "RTS", flags: FlagError | FlagCopy, fixed: RTSSize, copyLen: RTSCopySize, routed: true},
	KindCTS:       {name: "CTS", flags: FlagError | FlagCopy, fixed: 0, routed: true},
	KindData:      {name: "DATA", fixed: -1, routed: true},
	KindAbandon:   {name: "ABANDON", fixed: 0, routed: true},
	KindNeighbour: {name: "NEIGHBOUR", flags: FlagReply, fixed: -1, max: MaxNeighbour},
	KindWake:      {name: "WAKE", fixed: 0},
	KindRelay:     {name: "RELAY", fixed: HeaderSize},
	KindPart:      {name: "PART", fixed: -1},
	KindDrop:      {name: "DROP", fixed: -1, max: MaxReasonSize},
}

func kindSpecOf(k Kind) (kindSpec, bool) {
	if int(k) >= len(kindSpecs) || kindSpecs[k].name == "" {
		return kindSpec{}, false
	}
	return kindSpecs[k], true
}

// Valid reports whether k is a kind this version of the format defines.
func (k Kind) Valid() bool {
	_, ok := kindSpecOf(k)
	return ok
}

// String returns the kind's name, or "KIND(n)" for an unknown value.
func (k Kind) String() string {
	if s, ok := kindSpecOf(k); ok {
		return s.name
	}
	return "KIND(" + strconv.Itoa(int(k)) + ")"
}

// Kinds returns every defined kind in ascending order.
func Kinds() []Kind {
	var ks []Kind
	for k := range kindSpecs {
		if kindSpecs[k].name != "" {
			ks = append(ks, Kind(k))
		}
	}
	return ks
}
