package ioloop

import (
	"github.com/boltmesh/boltmesh/frame"
)

// Handler decides where incoming payloads go and receives complete frames.
// Its methods are called with the connection's read side locked, from the
// loop goroutine or from a goroutine inside Conn.Progress: they must not
// block and must not call Progress on the same Conn.
type Handler interface {
	// Payload names the buffer for the payload of h: exactly h.Length bytes,
	// or nil to have the payload read into a pooled buffer. The buffer must
	// stay untouched by others until Deliver or Closed is called. Instead
	// it may call c.Discard and return nil to have the payload read and
	// dropped without being held anywhere, or c.Defer and return nil to
	// leave the payload in the socket until c.Resume, when Payload is asked
	// again for the same frame. A Payload that ends the connection (Abort,
	// Close) has nothing more read from it, and no buffer taken.
	Payload(c *Conn, h *frame.Header) []byte
	// Deliver hands over a complete frame. payload is the buffer Payload
	// returned or, when it returned nil, bb.B; in that case the handler owns
	// bb (see Buffer for what that means).
	Deliver(c *Conn, h *frame.Header, payload []byte, bb *Buffer)
	// Closed is called once, when the connection fails or is closed. err is
	// a *ConnError. A buffer named by Payload whose frame was not delivered
	// is abandoned: the loop no longer writes to it.
	Closed(c *Conn, err error)
}

// A Drainer is a Handler told when a drain of its connection ends: the
// goroutine that read the Stream (the loop, or one in Progress or Poll)
// has let the read side go, having read something or failed. What the
// handler's upcalls left for later (a reply to write) goes out there,
// once per drain, from no read upcall. Drained must not block; it may
// write to any connection.
type Drainer interface {
	Handler
	// Drained is told that a drain of c ended.
	Drained(c *Conn)
}

// A Failer is a Handler told that its connection is about to end: Failing
// runs once, as the connection fails (a read or decode error, Abort,
// Close; not a failed write), after it is marked failed and before its
// Stream is shut down and its queue failed, so that a frame it writes
// then with Conn.LastWord goes out ahead of the end, if the Stream takes
// it at once. It may run with the read side owned; it must not block.
type Failer interface {
	Handler
	// Failing is told the *ConnError the connection fails with.
	Failing(c *Conn, err error)
}

// A PartHandler is a Handler that may take a payload in parts
// (Conn.InParts).
type PartHandler interface {
	Handler
	// DeliverPart hands over the part of h's payload that starts at off:
	// bb.B, which the handler owns (see Buffer). The last part ends at
	// h.Length; a frame whose connection ends before then has no last
	// part, and Closed is called.
	DeliverPart(c *Conn, h *frame.Header, off uint64, bb *Buffer)
}
