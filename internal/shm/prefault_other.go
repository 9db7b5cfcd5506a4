//go:build darwin || freebsd || netbsd || openbsd

package shm

// populate reports false: these systems have no madvise that faults pages
// in writable, so Prefault touches them.
func populate([]byte) bool { return false }
