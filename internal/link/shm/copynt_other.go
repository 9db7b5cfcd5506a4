//go:build !amd64 || purego

package shm

// copyStream is copy where no non-temporal store is written.
func copyStream(dst, src []byte) int { return copy(dst, src) }
