//go:build !amd64 || purego

package ioloop

// copyStream is copy where no non-temporal store is written.
func copyStream(dst, src []byte) int { return copy(dst, src) }
