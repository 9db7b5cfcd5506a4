package engine_test

import (
	"testing"

	"github.com/boltmesh/boltmesh/internal/childproc"
)

// TestMain runs a child role (runChild) when the test binary was started
// as a rank of a multi-process test (startChild), else the tests.
func TestMain(m *testing.M) { childproc.Main(m, runChild) }
