package plumbtest

import "errors"

// The owner's errors.
var (
	// ErrRefused is the error of a receive the Owner refuses.
	ErrRefused = errors.New("refused by the owner")
	// ErrConflict is the error of a receive the Owner judges in conflict
	// with a message queued on another tag.
	ErrConflict = errors.New("a conflict, says the owner")
)
