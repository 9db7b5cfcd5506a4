// Package stdnet is the baseline boltmesh is measured against: the same
// workloads (messages, one-sided put/get, barrier, allreduce) over a mesh
// of plain *net.TCPConn, written the ordinary Go way. A frame is a 24-byte
// header and a payload, written with one net.Buffers.WriteTo (writev); the
// receiving goroutine reads the header through a bufio.Reader and the
// payload with io.ReadFull straight into the caller's buffer, so the
// payload is not copied in user space either, and no goroutine hand-off
// sits in a message's path.
//
// Between every pair of ranks there is one connection for messages, and
// one per direction for the one-sided operations: the rank that dialed it
// sends requests (PUT, GET, FENCE) and the other rank's server goroutine
// answers them out of its heap, without the owner taking part.
//
// Every connection opens with a handshake (see Check): the acceptor sends
// a fresh nonce, the dialer answers with its rank, the connection's
// channel and, with a mesh key (Options.Key), an HMAC over the nonce. A
// connection that fails it is refused and reported, and the mesh forms
// from the others: a stranger connecting to a rank's port cannot join the
// mesh or stop it from forming.
//
// A Mesh's methods may be called from one goroutine at a time.
package stdnet
