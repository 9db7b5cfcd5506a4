package sealed

import (
	"encoding/binary"
	"fmt"
)

// The record format (frame/spec.md, "Sealed links").
const (
	// HeaderSize is the length of a record's header: the plaintext's
	// length (uint32, little-endian), the record's type, three zeros.
	HeaderSize = 8
	// TagSize is the length of the AEAD's tag, after the ciphertext.
	TagSize = 16
	// Overhead is what sealing adds to a record's plaintext.
	Overhead = HeaderSize + TagSize
	// MaxRecord is the most plaintext one record carries.
	MaxRecord = 64 << 10
)

// Record types.
const (
	recordData   = 0 // plaintext of the byte stream
	recordUpdate = 1 // empty: the records after it are sealed with the next key
)

// The hard limits of one key, in either direction: a sender updates its
// key before them (Limits), and a receiver refuses a record past them.
// They keep AES-GCM's forgery and distinguishing advantages far below
// 2^-32 (well under 2^24 records and 2^36 bytes per key).
const (
	HardRecords = 1 << 24
	HardBytes   = 1 << 36
)

// Limits say when a direction takes a new key: after Records records or
// Bytes bytes of plaintext under one, whichever comes first. The zero
// value is DefaultLimits.
type Limits struct {
	Records uint64
	Bytes   uint64
}

// DefaultLimits: a key update every 2^20 records or 2^34 bytes (16
// GiB), whichever comes first: a sixteenth of the hard limits.
var DefaultLimits = Limits{Records: 1 << 20, Bytes: 1 << 34}

// Options are a Stream's settings; the zero value is the default.
type Options struct {
	// Limits say when each direction updates its key.
	Limits Limits
	// Crew is how many goroutines, the caller's included, seal the
	// records of one large write, or open those of one large read, at
	// once (a process shares one crew among its Streams). 0 or 1: the
	// caller alone, the default. More pays where cores would otherwise
	// idle: a one-way 16 MiB stream between 2 ranks on the 2-core
	// development VM runs slower with 2 than with 1.
	Crew int
}

// check fills in defaults and refuses limits past the hard ones.
func (l Limits) check() (Limits, error) {
	if l.Records == 0 {
		l.Records = DefaultLimits.Records
	}
	if l.Bytes == 0 {
		l.Bytes = DefaultLimits.Bytes
	}
	if l.Records > HardRecords-1 || l.Bytes > HardBytes-MaxRecord {
		return l, fmt.Errorf("%w: Limits %d records, %d bytes, past %d and %d", ErrKeyLimit, l.Records, l.Bytes, HardRecords-1, HardBytes-MaxRecord)
	}
	return l, nil
}

// putHeader writes a record's header into hdr.
func putHeader(hdr []byte, n int, typ uint8) {
	binary.LittleEndian.PutUint32(hdr, uint32(n))
	hdr[4], hdr[5], hdr[6], hdr[7] = typ, 0, 0, 0
}

// parseHeader reads a record's header: its plaintext's length and type,
// and whether it is one this version writes.
func parseHeader(hdr []byte) (n int, typ uint8, ok bool) {
	n, typ = int(binary.LittleEndian.Uint32(hdr)), hdr[4]
	ok = n <= MaxRecord && hdr[5]|hdr[6]|hdr[7] == 0 &&
		(typ == recordData || typ == recordUpdate && n == 0)
	return n, typ, ok
}
