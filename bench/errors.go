package bench

import (
	"errors"
	"fmt"
)

// Sentinel errors of package bench. Test for them with errors.Is.
var (
	// ErrCheck is matched (errors.Is) by every data-check failure, and wrapped
	// by Run's error when a case failed its check.
	ErrCheck = errors.New("bench: data check failed")
	// ErrInvalidReport is wrapped by every error Validate returns.
	ErrInvalidReport = errors.New("bench: invalid report")
	// ErrUnsupported is returned by a suite's Start on an Endpoint that
	// lacks the operation the suite times.
	ErrUnsupported = errors.New("bench: the implementation lacks the suite's operation")
	// errAborted wraps failures that end a run.
	errAborted = errors.New("run aborted")
)

// CheckError reports a data-check failure: bytes received or read back
// that differ from the ones sent.
type CheckError struct {
	Rank int
	Msg  string
}

// Error implements error.
func (e *CheckError) Error() string { return fmt.Sprintf("rank %d: data check: %s", e.Rank, e.Msg) }

// Is makes errors.Is(err, ErrCheck) true for every *CheckError.
func (e *CheckError) Is(target error) bool { return target == ErrCheck }
