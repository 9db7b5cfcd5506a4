//go:build linux

package shm_test

import (
	"testing"

	"github.com/boltmesh/boltmesh/internal/childproc"
)

func TestMain(m *testing.M) { childproc.Main(m, runChild) }
