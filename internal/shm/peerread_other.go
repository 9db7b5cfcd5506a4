//go:build !linux

package shm

import (
	"errors"
	"fmt"
	"runtime"
)

// CanReadProcess reports whether ReadProcess is implemented here.
const CanReadProcess = false

// ReadProcess is implemented on Linux only (process_vm_readv); here it
// returns an error wrapping errors.ErrUnsupported.
func ReadProcess(pid int, addr uintptr, dst []byte) error {
	return fmt.Errorf("shm: reading another process's memory on %s: %w", runtime.GOOS, errors.ErrUnsupported)
}
