package collective

import (
	"context"
	"fmt"
	"math"
	"runtime/pprof"
	"unsafe"
)

// collKind names a collective in profile labels.
type collKind int

const (
	kindBroadcast collKind = iota
	kindReduce
	kindAllGather
	kindReduceScatter
	kindGather
	kindScatter
	kindAllToAll
	collKinds
	// Kinds with labels of their own; they only name calls in metas.
	kindAllReduce         = collKinds + 1
	kindAllReduceDeadline = collKinds + 2
	kindOneSidedAgree     = collKinds + 3
)

// callMeta is the word every message of a call carries (the frame's Aux)
// and every receive checks, so that ranks which called different
// collectives, or the same one over different element types or
// reductions, fail with ErrMismatch instead of combining the wrong bytes:
// 0xB0 | kind | dtype | op, a byte each.
func callMeta(k collKind, dt DType, op Op) uint32 {
	return 0xB0<<24 | uint32(k)<<16 | uint32(dt)<<8 | uint32(op)
}

// metaString describes a call meta for error messages.
func metaString(m uint32) string {
	k := collKind(m >> 16 & 0xff)
	name := "unknown collective"
	switch {
	case k < collKinds:
		name = collLabelNames[k][0]
	case k == kindAllReduce:
		name = "allreduce"
	case k == kindAllReduceDeadline:
		name = "allreduce with a deadline"
	case k == kindOneSidedAgree:
		name = "one-sided allreduce's agreement"
	}
	if dt := DType(m >> 8 & 0xff); dt != 0 {
		name += " of " + dt.String()
	}
	if op := Op(m & 0xff); op != 0 {
		name += " with " + op.String()
	}
	return name
}

// collLabelNames are the "op" and "algorithm" labels of each collKind.
var collLabelNames = [collKinds][2]string{
	kindBroadcast:     {"broadcast", "binomial"},
	kindReduce:        {"reduce", "binomial"},
	kindAllGather:     {"allgather", "ring"},
	kindReduceScatter: {"reducescatter", "ring"},
	kindGather:        {"gather", "linear"},
	kindScatter:       {"scatter", "linear"},
	kindAllToAll:      {"alltoall", "pairwise"},
}

// collLabelCtx holds the profile label sets of every collective and size
// class, made once for the package: they depend on nothing else, and so
// labelling a call allocates nothing.
var collLabelCtx = func() (t [collKinds][len(sizeClasses)]context.Context) {
	for k := range t {
		for s := range t[k] {
			t[k][s] = pprof.WithLabels(context.Background(), pprof.Labels(
				"op", collLabelNames[k][0], "algorithm", collLabelNames[k][1], "size", sizeClasses[s].name))
		}
	}
	return t
}()

// collLabels returns the profile labels of a call of kind k moving size
// bytes. Like AllReduce's, they go over the labels of the call's ctx for
// its duration (labels.go).
func collLabels(k collKind, size int) context.Context {
	s := 0
	for size >= sizeClasses[s].below {
		s++
	}
	return collLabelCtx[k][s]
}

// collScratch is c.scratch aligned to 8 bytes, so that any element type
// can be viewed in it at any offset that is a multiple of its size.
func (c *Comm) collScratch(n int) []byte {
	return c.scratch(n)[:n:n]
}

// collElemSize returns dt's element size, or an ErrDType error.
func collElemSize(fn string, dt DType) (int, error) {
	esz := dt.Size()
	if esz == 0 {
		return 0, errDType(fn, dt)
	}
	return esz, nil
}

// collCheckRoot checks that root is a rank.
func collCheckRoot(fn string, root, n int) error {
	if root < 0 || root >= n {
		return fmt.Errorf("%w (%s: root %d, world size %d)", ErrRoot, fn, root, n)
	}
	return nil
}

// collCheckCounts checks counts (elements per rank) and returns their sum
// in bytes.
func collCheckCounts(fn, arg string, counts []int, n, esz int) (int, error) {
	if len(counts) != n {
		return 0, fmt.Errorf("%w (%s: %s has %d entries, world size %d)", ErrCounts, fn, arg, len(counts), n)
	}
	sum := 0
	for i, k := range counts {
		if k < 0 || k > math.MaxInt/esz-sum {
			return 0, fmt.Errorf("%w (%s: %s[%d] = %d)", ErrCounts, fn, arg, i, k)
		}
		sum += k
	}
	return sum * esz, nil
}

// collCheckLen checks that buffer arg has want bytes.
func collCheckLen(fn, arg string, dt DType, got, want int) error {
	if got != want {
		return fmt.Errorf("%w (%s: %s is %d bytes, counts make it %d elements of %v = %d bytes)",
			ErrBufferSize, fn, arg, got, want/dt.Size(), dt, want)
	}
	return nil
}

// collCheckReduce checks the arguments every reducing collective shares:
// dt, op, data's length (a multiple of the element size) and alignment.
func collCheckReduce(fn string, dt DType, data []byte, op Op) error {
	esz, err := collElemSize(fn, dt)
	if err != nil {
		return err
	}
	if !op.valid() {
		return errOp(fn, op)
	}
	if len(data)%esz != 0 {
		return &LengthError{Func: fn, DType: dt, DstLen: len(data), SrcLen: -1, Err: ErrDTypeLength}
	}
	if p := uintptr(unsafe.Pointer(unsafe.SliceData(data))); len(data) > 0 && p%uintptr(esz) != 0 {
		return &AlignmentError{Func: fn, DType: dt, Arg: "data", Addr: p}
	}
	return nil
}

// collOffset returns the byte offset of segment i of a buffer laid out by
// counts.
func collOffset(counts []int, i, esz int) int {
	off := 0
	for _, k := range counts[:i] {
		off += k
	}
	return off * esz
}

// collTag returns the tag of step s of a call whose first tag is base. A
// call with more steps than tagsPerCall reuses its tags; that is safe
// because matching is FIFO per (source, tag) and each rank takes the
// steps in order.
func collTag(base uint32, s int) uint32 {
	return base + uint32(s%tagsPerCall)
}
