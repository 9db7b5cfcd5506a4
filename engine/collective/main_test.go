package collective_test

import (
	"testing"

	"github.com/boltmesh/boltmesh/internal/childproc"
)

// TestMain runs a child role (procRunChild) when the test binary was
// started as a rank of a multi-process test or benchmark (procStart),
// else the tests, checking for leaked goroutines.
func TestMain(m *testing.M) { childproc.Main(m, procRunChild) }
