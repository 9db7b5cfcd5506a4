//go:build !amd64 || purego

package collective

import "unsafe"

// useVec is false: this architecture has no vector kernels.
var useVec = false

// reduceVec reduces nothing; the portable loops do all the work.
func reduceVec(DType, unsafe.Pointer, unsafe.Pointer, int, Op) int { return 0 }
