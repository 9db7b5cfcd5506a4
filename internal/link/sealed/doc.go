// Package sealed is the sealed link kind: an ioloop.Stream over another
// (a TCP socket's) that seals every byte the Conn writes, frame headers
// included, into records authenticated and encrypted with an AEAD, and
// opens what it reads, so that a link across a network nobody trusts
// carries nothing readable and nothing altered (frame/spec.md, "Sealed
// links"). Nothing above the Stream seam learns that a link is sealed.
//
// A record is an 8-byte header (the plaintext's length, a type, zeros),
// sent in the clear and authenticated as the AEAD's additional data, and
// the ciphertext with its 16-byte tag. Each direction has its own key,
// derived with HKDF from the mesh key and the whole handshake (Derive),
// and its nonce is an implicit counter of the records sealed under that
// key: a record replayed, reordered, dropped, cut short or altered fails
// to open, and the link fails with ErrTampered. A direction takes a new
// key (a key-update record) long before the AEAD's limits (Limits).
//
// The write path: Writev seals what the Conn hands it into records in a
// buffer of the Stream's own (straight from the caller's buffer where a
// record's bytes lie in one), writes them, and reports them all taken;
// what the socket had no room for waits there (ioloop.Buffering) and goes
// first on the next call. The read path: Read fills a buffer with what
// the socket has and opens the whole records straight into the caller's
// buffer where they fit, else in place, handing their plaintext over.
// Records are independent (a record's nonce is its number), so the
// records of one large write or read are sealed or opened as a batch by
// several goroutines where Options.Crew asks for them (crew.go).
//
// Lock rule: the write side (w, wb, out) belongs to the Conn's writer
// and the read side (r, rbatch, rb) to its reader, as ioloop.Stream
// states; neither takes a lock. A batch's jobs belong to the crew from
// their hand-over until the batch's WaitGroup is done.
package sealed
