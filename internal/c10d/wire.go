package c10d

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
)

// Protocol is a numbering of the query types (see the package doc).
type Protocol int

const (
	// ProtocolDetect makes Dial find out which protocol the store speaks.
	ProtocolDetect Protocol = iota
	// ProtocolLegacy is torch 1.x and 2.0's: no handshake, SET=0.
	ProtocolLegacy
	// ProtocolValidate is later releases': VALIDATE first, SET=1.
	ProtocolValidate
)

func (p Protocol) String() string {
	switch p {
	case ProtocolDetect:
		return "detect"
	case ProtocolLegacy:
		return "legacy (torch 1.x-2.0)"
	case ProtocolValidate:
		return "validate (later torch 2.x)"
	}
	return fmt.Sprintf("Protocol(%d)", int(p))
}

// query is a query of the protocol, numbered by queryCodes.
type query int

const (
	qSet query = iota
	qGet
	qAdd
	qCheck
	qWait
	qNumKeys
	qDelete
	qValidate
	nQueries
)

// noQuery marks a query a protocol lacks.
const noQuery = 0xff

// queryCodes are the query type bytes of each protocol.
var queryCodes = [...][nQueries]byte{
	ProtocolLegacy:   {qSet: 0, qGet: 2, qAdd: 3, qCheck: 4, qWait: 5, qNumKeys: 6, qDelete: 8, qValidate: noQuery},
	ProtocolValidate: {qSet: 1, qGet: 3, qAdd: 4, qCheck: 5, qWait: 6, qNumKeys: 7, qDelete: 8, qValidate: 0},
}

// Answers of CHECK and WAIT.
const (
	checkReady    = 0 // CheckResponseType::READY
	checkNotReady = 1 // CheckResponseType::NOT_READY
	waitStop      = 0 // WaitResponseType::STOP_WAITING
)

// validateMagic is the argument of VALIDATE.
const validateMagic uint32 = 0x3C85F7CE

// byteOrder is the host's: torch sends its integers' memory as is.
var byteOrder = binary.NativeEndian

// request builds one query in a buffer, to be written with one call.
type request struct {
	b   []byte
	max int // Options.MaxValue
	err error
}

func (r *request) start(p Protocol, q query) {
	r.b, r.err = append(r.b[:0], queryCodes[p][q]), nil
}

func (r *request) uint32(v uint32) { r.b = byteOrder.AppendUint32(r.b, v) }
func (r *request) uint64(v uint64) { r.b = byteOrder.AppendUint64(r.b, v) }

// str appends a sized string, refusing one longer than r.max.
func (r *request) str(s []byte) {
	if len(s) > r.max {
		r.err = fmt.Errorf("%w: %d bytes to send, limit %d", ErrTooLong, len(s), r.max)
		return
	}
	r.uint64(uint64(len(s)))
	r.b = append(r.b, s...)
}

// keys appends a key count and the keys, as CHECK and WAIT take them.
func (r *request) keys(keys []string) {
	r.uint64(uint64(len(keys)))
	for _, k := range keys {
		r.str([]byte(k))
	}
}

// readSized reads a sized string of at most max bytes. A longer one is
// refused with ErrTooLong once its length is read, before any of it is.
func readSized(br *bufio.Reader, max int) ([]byte, error) {
	n, err := readUint64(br)
	if err != nil {
		return nil, err
	}
	if n > uint64(max) {
		return nil, fmt.Errorf("%w: the store sent a %d-byte string, limit %d", ErrTooLong, n, max)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(br, b); err != nil {
		return nil, noEOF(err)
	}
	return b, nil
}

func readUint64(br *bufio.Reader) (uint64, error) {
	var b [8]byte
	if _, err := io.ReadFull(br, b[:]); err != nil {
		return 0, noEOF(err)
	}
	return byteOrder.Uint64(b[:]), nil
}

func readInt64(br *bufio.Reader) (int64, error) {
	v, err := readUint64(br)
	return int64(v), err
}

func readByte(br *bufio.Reader) (byte, error) {
	b, err := br.ReadByte()
	return b, noEOF(err)
}

// noEOF turns a clean end of stream into io.ErrUnexpectedEOF: the store
// hung up where an answer was due.
func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
