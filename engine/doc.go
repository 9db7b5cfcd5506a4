// Package engine is boltmesh's transport: NetTransport, a full mesh of TCP
// connections among the ranks of a world, driven by an epoll/kqueue event
// loop (package ioloop) with zero-copy sends and receives.
//
// # Messaging
//
// Transport is tagged two-sided messaging: Send(to, tag, p) and
// Recv/RecvInto(from, tag), matched FIFO per (source, tag), with timeout
// and context variants, and a Barrier (dissemination, or pairwise in
// worlds of a power of two; through shared memory between neighbours).
// Sends are one writev of header and payload; a receive posted before its
// message arrives is read straight from the socket into the caller's
// buffer.
//
// # Flow control
//
// Each rank grants each peer Options.MaxQueuedBytes of credit: messages
// that arrived before their receive (and RPC requests not yet taken) hold
// it until taken, so a flooding peer waits for credit instead of growing
// this rank's memory, and no connection is ever left unread for lack of
// memory. One-sided operations, RPC and control frames have a stream of
// their own, so they never wait behind a message. Messages above
// Options.EagerMax go by rendezvous: their bytes
// move once a receive has taken them, straight into its buffer (Send then
// returns once the receiver has posted a receive; SendNB does not wait).
// The path of a message:
//
//	eager:      send -> acquire (credit) -> SEND frame ... Payload: posted
//	            receive's buffer, or pooled -> deliver (queue) -> recv
//	            takes it -> freeCredit -> CREDIT frame (from a read
//	            upcall: recorded, written at the drain's end)
//	rendezvous: send -> startRdv: RTS ... deliverRTS: matched (or queued
//	            until recv takes it) -> CTS ... deliverCTS: DATA from the
//	            sender's buffer ... dataPayload: the receive's buffer
//
// See credit.go, rendezvous.go and frame/spec.md.
//
// # One-sided operations
//
// Every rank maps a symmetric heap (Options.HeapSize). Ranks that allocate
// in the same order (collective.Comm.Alloc checks it across ranks) get the same
// offsets, so a SymmetricBuffer names the same memory everywhere (On picks
// the rank), and Put and Get move bytes straight between the caller's
// memory and another rank's heap without that rank taking part; PutNB and
// GetNB return a Request to Wait on. A transfer out of range fails before
// it is sent (*OutOfBoundsError); one the target refuses anyway fails the
// next Quiet or Barrier (*RemoteError). Barrier is Quiet followed by a
// barrier: every put issued before it by any rank is visible after it.
//
// # Failure
//
// A peer whose connection breaks is lost: every pending and later
// operation involving it returns an error that errors.Is(err, ErrPeerLost),
// promptly, while the other peers keep working. Close fails blocked
// operations with ErrClosed. Errors are the sentinels in errors.go and
// typed errors (*PeerError, *UnknownRankError, *TruncatedError, ...)
// that wrap them.
//
// # Construction
//
// Bind(rank, world, peers, opts) or FromListener with a pre-bound
// listener: ranks dial lower ranks and accept higher ones, each connection
// opening with a HELLO handshake (magic, version, world, rank, mesh id and
// an HMAC-SHA256 proof of the mesh key in both directions, the dialer
// first). Set a key (Options.MeshKey or BOLTMESH_KEY): without one, anyone
// who reaches a rank can join as a rank. See frame/spec.md for the wire
// format.
//
// # Sealed links
//
// With a key, links that leave the host are sealed (Options.Seal): after
// the handshake every byte of the connection goes in AEAD records
// (internal/link/sealed, a Stream under the Conn, which nothing above
// it knows of), with keys derived from the mesh key and both HELLOs. A
// record that does not open loses that peer with ErrTampered; who is
// sealed, and with which cipher, is in Topology().
//
// # Layers
//
// Beneath the API, one matcher per peer (posted receives, queued
// messages, rendezvous, one-sided state, credit); beneath it, the peer's
// link, which moves its frames (a full mesh's streams, a star's one
// stream, or a route through a star's coordinator); beneath that, ioloop's
// streams. engine/DESIGN.md draws the send path (Send to writev) and the
// receive path (RecvInto to read) through them, layer by layer, with the
// function names.
package engine
