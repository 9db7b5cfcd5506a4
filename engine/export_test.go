package engine

import "time"

// Unexported pieces the external tests (package engine_test) check.
var (
	KeylessExposed = keylessExposed
	NoKeyWarning   = noKeyWarning
)

// The refusal log's rate: a burst, then one line per interval.
const (
	RefusalBurst = refusalBurst
	RefusalEvery = refusalEvery
)

// The reserved tags of the barrier and of AllocCollective, for the fuzz
// targets that play a peer's part in them (payload_fuzz_test.go).
const (
	TagAlloc   = tagAlloc
	TagBarrier = tagBarrier
)

// SendTag is Send on any tag, reserved ones included.
func SendTag(t *NetTransport, to int, tag uint32, p []byte) error { return t.send(nil, to, tag, p) }

// RecvTag is RecvTimeout on any tag, reserved ones included.
func RecvTag(t *NetTransport, from int, tag uint32, d time.Duration) ([]byte, error) {
	_, b, err := t.recv(from, tag, nil, false, waitOpts{op: "recv", timeout: d})
	return b, err
}
