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
	if a == ([16]byte{}) {
		t.Fatal("HostID is zero")
	}
}

// TestMachineID: stable, not zero, and not the host id (engine's
// TestCrowdedAcrossHosts checks that ranks of two emulated hosts of one
// machine count each other).
func TestMachineID(t *testing.T) {
	m, err := shm.MachineID()
	if err != nil {
		t.Fatal(err)
	}
	m2, _ := shm.MachineID()
	h, _ := shm.HostID("")
	if m != m2 || m == ([16]byte{}) || m == h {
		t.Fatalf("MachineID %x then %x, HostID %x", m, m2, h)
	}
}
