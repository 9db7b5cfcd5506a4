package collective_test

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain runs a child role instead of the tests when the test binary was
// re-executed as a rank of a multi-process test or benchmark (see
// procStart); otherwise it runs the tests and checks for leaked goroutines.
func TestMain(m *testing.M) {
	if role := os.Getenv(procRoleEnv); role != "" {
		if err := procRunChild(role); err != nil {
			fmt.Fprintf(os.Stderr, "child %s rank %s: %v\n", role, os.Getenv(procRankEnv), err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}
