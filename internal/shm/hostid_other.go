//go:build netbsd || openbsd

package shm

import (
	"errors"
	"runtime"
)

// hostParts fails: netbsd and openbsd offer no boot identity here.
func hostParts() ([]string, error) {
	return nil, &HostIDError{Source: runtime.GOOS, Err: errors.ErrUnsupported}
}

// machineParts is unknown here.
func machineParts() ([]string, error) { return hostParts() }
