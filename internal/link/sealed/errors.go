package sealed

import (
	"errors"
	"fmt"
)

// Sentinel errors of the package. Test for them with errors.Is.
var (
	// ErrTampered means a record did not open: it was altered, replayed,
	// reordered, dropped or cut short on its way, or was not sealed with
	// this link's key. The link is done.
	ErrTampered = errors.New("sealed: link tampered with")
	// ErrKeyLimit means a direction would seal past the hard limit of one
	// key (HardRecords, HardBytes) without a key update: Limits set above
	// them.
	ErrKeyLimit = errors.New("sealed: key used past its limit")
)

// TamperError says which record failed and why; it wraps ErrTampered.
type TamperError struct {
	Record uint64 // the record's number under its key
	Key    uint32 // the key's generation: 0, then one more at each update
	Why    string
	// Cut: the stream ended inside the record. Someone on the path cut
	// it, or the other end ended its stream with a record half written
	// (it dropped this rank while its socket was full): the two cannot
	// be told apart.
	Cut bool
}

func (e *TamperError) Error() string {
	return fmt.Sprintf("%v: record %d of key %d: %s", ErrTampered, e.Record, e.Key, e.Why)
}

// Unwrap returns ErrTampered.
func (e *TamperError) Unwrap() error { return ErrTampered }
