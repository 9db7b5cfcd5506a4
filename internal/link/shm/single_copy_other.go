//go:build !linux

package shm

import "fmt"

// SingleCopy names the mechanism ReadPeer uses on this system, or is ""
// where it has none: here, none (large messages between neighbours go
// through the rings).
const SingleCopy = ""

// ReadPeer fails with ErrNoSingleCopy: this system has no single copy.
func ReadPeer(pid int, addr uint64, dst []byte) error {
	return fmt.Errorf("%w: no single copy on this system", ErrNoSingleCopy)
}
