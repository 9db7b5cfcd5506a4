// Package ioloop drives boltmesh frames over non-blocking streams with raw
// epoll (Linux) or kqueue (macOS and the BSDs).
//
// A Loop owns a poller and a set of Conns, each over a Stream: the medium's
// seam (stream.go), a socket here, another kind of link in a package of
// its own (a pipe in shared memory, internal/link/shm), which the Conn
// drives the same way. Sending is one writev of
// [header, caller's payload] per frame, with frames queued for the same
// connection coalesced into one writev; the payload is never copied into a
// send buffer. Receiving reads each header, asks the connection's Handler
// where the payload goes, and reads the payload straight there, or into a
// pooled Buffer (its ownership rules are stated once, at the type) when
// the handler has no destination yet.
//
// Progress is made both by the loop goroutine, when the poller reports
// readiness, and by any goroutine that calls Conn.Progress: a goroutine
// waiting for a message can read the socket itself instead of waiting for
// the loop to wake it, which removes a goroutine hand-off from the latency of
// every message. Who may read or write a Conn at a time is one rule, stated
// once (internal/own): each side has one owner, taken without waiting, and
// work for a side that is owned is left to its owner, who serves it
// before it lets go. A caller that wants a Conn served later, not on its
// own stack, does not start a goroutine for it: it wakes the Conn
// (Conn.Wake, wake.go), and the loop serves it.
//
// The package knows file descriptors, readiness and vectored I/O only. It
// does not know what a rank, a tag or a pipe is.
package ioloop
