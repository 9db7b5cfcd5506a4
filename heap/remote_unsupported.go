//go:build !(linux || darwin || freebsd || netbsd || openbsd)

package heap

// Map fails: this platform has no shared-memory mechanism.
func Map(fd int, size uint64) (*Remote, error) {
	return nil, &AllocError{Op: "map", Size: size, Err: errUnsupported}
}
