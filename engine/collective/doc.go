// Package collective holds the element-wise reduction layer of boltmesh's
// collectives (allreduce, reduce-scatter, reduce): the kernels that
// combine a received buffer into a local one, dst[i] = dst[i] op src[i].
// The communication algorithms, written against engine.Transport, build on
// it.
//
// # Types and operators
//
// A DType names the element type of a raw buffer: Float32, Float64, Int32,
// Int64, and the 16-bit floats Float16 (IEEE 754 binary16) and BFloat16,
// which are carried as uint16 bit patterns. An Op is Sum, Mean, Max, Min or
// Prod. Mean reduces as Sum; after the last contribution the caller
// divides by the number of contributions with Finish.
//
// # Entry points
//
//   - Reduce and Finish: generic over Elem (float32, float64, int32, int64
//     and types based on them).
//   - Reduce16 and Finish16: []uint16 holding Float16 or BFloat16; each
//     element pair is combined in float32 and rounded back to 16 bits.
//   - ReduceBytes and FinishBytes: raw []byte buffers (as received from
//     the transport) with a DType; they view the bytes as elements without
//     copying and return errors (errors.Is-able sentinels, see errors.go)
//     instead of panicking.
//   - AsBytes, FromBytes, AsBytes16, FromBytes16: zero-copy views between
//     element slices and byte slices.
//   - F16ToF32, F32ToF16, BF16ToF32, F32ToBF16: exact widening and
//     round-to-nearest-even narrowing of 16-bit floats.
//
// The kernels do not allocate and are plain loops over the elements, with
// the switch on the operator outside the loop and no bounds checks inside
// it.
//
// # Semantics and determinism
//
// Integer Sum and Prod wrap around on overflow; integer Mean is the
// truncating division of the wrapped sum. Floating-point Sum and Prod are
// one IEEE round-to-nearest-even operation per element. Max and Min are
// exact, order -0 below +0, and propagate NaN (the NaN already in dst wins,
// otherwise src's). See Reduce for details.
//
// Every kernel is deterministic: the same inputs give the same output bits,
// on every architecture, except that the sign and payload of a NaN
// produced by arithmetic (Sum, Prod, Mean) are unspecified. The kernels never
// reassociate: each call performs exactly one operation per element, and
// there is no multiply-add for the compiler to fuse. Floating-point Sum and
// Prod are not associative, however, so a collective yields bit-identical
// results on every rank only if every rank applies the contributions in
// the same order, i.e. if the algorithm, not the kernel, fixes the order.
// Max and Min do not depend on the order except for NaN payloads.
package collective
