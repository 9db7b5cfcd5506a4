package engine

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
