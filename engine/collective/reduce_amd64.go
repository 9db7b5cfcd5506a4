//go:build amd64 && !purego

package collective

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// useVec enables the AVX2 kernels; tests turn it off to compare them with
// the portable loops.
var useVec = cpu.X86.HasAVX2

// vecBlock is the number of bytes one iteration of a vector kernel covers.
const vecBlock = 128

// The AVX2 kernels (reduce_amd64.s): d[i] = d[i] op s[i] over blocks ×
// vecBlock bytes. Each lane does the one IEEE (or two's complement)
// operation the portable loop does, so results are bit-identical to it.
//
//go:noescape
func addF32AVX2(d, s unsafe.Pointer, blocks int)

//go:noescape
func addF64AVX2(d, s unsafe.Pointer, blocks int)

//go:noescape
func mulF32AVX2(d, s unsafe.Pointer, blocks int)

//go:noescape
func mulF64AVX2(d, s unsafe.Pointer, blocks int)

//go:noescape
func addI32AVX2(d, s unsafe.Pointer, blocks int)

//go:noescape
func addI64AVX2(d, s unsafe.Pointer, blocks int)

//go:noescape
func mulI32AVX2(d, s unsafe.Pointer, blocks int)

//go:noescape
func maxI32AVX2(d, s unsafe.Pointer, blocks int)

//go:noescape
func minI32AVX2(d, s unsafe.Pointer, blocks int)

// reduceVec reduces the leading whole vecBlocks of n elements of dt at d
// and s with a vector kernel, if one exists for (dt, op), and returns the
// number of elements it reduced; the caller does the rest.
func reduceVec(dt DType, d, s unsafe.Pointer, n int, op Op) int {
	if !useVec {
		return 0
	}
	esz := dt.Size()
	blocks := n * esz / vecBlock
	if blocks == 0 {
		return 0
	}
	if !vecKernel(dt, op, d, s, blocks) {
		return 0
	}
	return blocks * vecBlock / esz
}

// vecKernel runs the kernel for (dt, op) and reports whether there is one.
// Float Max and Min have no kernel: their -0 and NaN rules differ from
// VMAXPS's.
func vecKernel(dt DType, op Op, d, s unsafe.Pointer, blocks int) bool {
	sum := op == Sum || op == Mean
	switch {
	case dt == Float32 && sum:
		addF32AVX2(d, s, blocks)
	case dt == Float64 && sum:
		addF64AVX2(d, s, blocks)
	case dt == Float32 && op == Prod:
		mulF32AVX2(d, s, blocks)
	case dt == Float64 && op == Prod:
		mulF64AVX2(d, s, blocks)
	case dt == Int32 && sum:
		addI32AVX2(d, s, blocks)
	case dt == Int64 && sum:
		addI64AVX2(d, s, blocks)
	case dt == Int32 && op == Prod:
		mulI32AVX2(d, s, blocks)
	case dt == Int32 && op == Max:
		maxI32AVX2(d, s, blocks)
	case dt == Int32 && op == Min:
		minI32AVX2(d, s, blocks)
	default:
		return false
	}
	return true
}
