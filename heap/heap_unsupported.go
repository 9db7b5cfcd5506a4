//go:build !(linux || darwin || freebsd || netbsd || openbsd)

package heap

import (
	"errors"
	"fmt"
	"runtime"
)

// errUnsupported says this platform has no shared-memory mechanism yet.
var errUnsupported = fmt.Errorf("heap: shared memory on %s: %w", runtime.GOOS, errors.ErrUnsupported)

// pageSize returns a nominal page size; no heap is ever mapped here.
func pageSize() uint64 { return 4096 }

// openShared fails: this platform has no supported mechanism.
func openShared(uint64) (int, error) { return -1, errUnsupported }

// mapShared fails: this platform has no supported mechanism.
func mapShared(int, uint64) ([]byte, error) { return nil, errUnsupported }

// unmap is never reached: no heap is mapped on this platform.
func unmap([]byte) error { return errUnsupported }

// closeFD is never reached: no heap is mapped on this platform.
func closeFD(int) error { return errUnsupported }
