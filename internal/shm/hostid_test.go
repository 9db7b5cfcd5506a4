//go:build linux || darwin || freebsd

package shm_test

import (
	"testing"

	"github.com/boltmesh/boltmesh/internal/shm"
)

func TestHostID(t *testing.T) {
	a, err := shm.HostID("")
	if err != nil {
		t.Fatal(err)
	}
	b, err := shm.HostID("")
	if err != nil || a != b {
		t.Fatalf("HostID not stable: %x then %x, %v", a, b, err)
	}
	x1, _ := shm.HostID("x")
	x2, _ := shm.HostID("x")
	y, _ := shm.HostID("y")
	if x1 != x2 {
		t.Fatal("two overrides with the same string differ")
	}
	if x1 == a || x1 == y {
		t.Fatal("an override does not change the id, or two overrides collide")
	}
	if a == ([32]byte{}) {
		t.Fatal("HostID is zero")
	}
}
