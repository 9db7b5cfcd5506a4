// Package c10d is a client of PyTorch's c10d TCPStore, the key-value
// store torchrun's agent serves on MASTER_ADDR:MASTER_PORT and that
// torch.distributed's env:// initialization meets at.
//
// # Wire protocol
//
// A client sends queries; the store answers some of them. A query is a
// one-byte query type followed by its arguments. A string (a key or a
// value) is sized: a uint64 length, then that many bytes. Integers are
// written in host byte order, as torch writes them (it sends their memory
// as is), so this package uses the byte order of the machine it runs on:
// both ends of a torch job share one.
//
//	query          request                         answer
//	SET            type key value                  none
//	GET            type key                        value (sized); a key that
//	                                               is not there closes the
//	                                               connection
//	ADD            type key int64                  int64, the new value (the
//	                                               value is kept as decimal
//	                                               text)
//	CHECK          type uint64(n) key×n            one byte: 0 all there,
//	                                               1 not all
//	WAIT           type uint64(n) key×n            one byte, 0, once every key
//	                                               is there (maybe much later)
//	GETNUMKEYS     type                            int64
//	DELETE_KEY     type key                        int64, the number deleted
//	VALIDATE       type uint32(0x3C85F7CE)         none (Validate protocol only)
//
// A query type the store does not know, or a query it cannot serve (a
// GET of a missing key), makes it close the connection. Get therefore
// waits for its key first, as torch's own client does.
//
// # Versions
//
// Two numberings of the query types exist; Dial detects which one a store
// speaks (Options.Protocol):
//
//   - ProtocolLegacy, spoken by torch 1.x and 2.0: no handshake, and SET=0,
//     COMPARE_SET=1, GET=2, ADD=3, CHECK=4, WAIT=5, GETNUMKEYS=6,
//     WATCH_KEY=7, DELETE_KEY=8 (releases after 1.13 add APPEND=9 to
//     CANCEL_WAIT=12, on which 1.13 closes the connection; this client
//     uses none of them). This is what Debian's python3-torch 1.13
//     serves, and the tests run against it.
//   - ProtocolValidate, spoken by the 2.x releases after 2.0 (read from their
//     sources; the tests check it only against c10dtest's fake): the first
//     query on a connection must be VALIDATE with the magic number
//     0x3C85F7CE, or the store closes it; WATCH_KEY is gone, so the types
//     are VALIDATE=0, SET=1, COMPARE_SET=2, GET=3, ADD=4, CHECK=5, WAIT=6,
//     GETNUMKEYS=7, DELETE_KEY=8.
//
// Detection sends the legacy GETNUMKEYS, a complete query in the legacy
// numbering with no side effect, and takes an int64 answer as a legacy
// store. A store of the Validate protocol either hangs up at once (its
// classic backend refuses a first query that is not VALIDATE) or waits
// for the rest of what it reads as a WAIT (its libuv backend); then Dial
// tries VALIDATE and the new GETNUMKEYS on a second connection. An
// answer that no store would give (a peer that speaks first, such as
// boltmesh's own rendezvous) is ErrNotStore. A legacy store serves its
// connections on one thread and blocks on a partial query, so Dial never
// sends one part of a query without the rest: the second probe, a partial
// SET to a legacy store, is sent only after the first went unanswered for
// Options.ProbeTimeout.
//
// # Bounds
//
// Every read is bounded: a sized answer longer than Options.MaxValue is
// refused with ErrTooLong before anything is allocated for it, and every
// operation has a deadline (its context's, or Options.Timeout). An
// operation that fails leaves the connection in an unknown place in the
// stream (a WAIT that timed out is still answered later), so the client
// is then broken: every later call returns ErrBroken.
package c10d
