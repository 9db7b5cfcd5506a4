// Package collective holds boltmesh's collectives: the Comm, which runs
// them (AllReduce, Broadcast, ReduceScatter, AllGather, ...) over an
// engine.NetTransport, the communication algorithms it chooses from, and
// the element-wise reduction kernels they build on, which combine a
// received buffer into a local one, dst[i] = dst[i] op src[i].
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
//   - Combine and Finish: generic over Elem (float32, float64, int32, int64
//     and types based on them).
//   - Combine16 and Finish16: []uint16 holding Float16 or BFloat16; each
//     element pair is combined in float32 and rounded back to 16 bits.
//   - CombineBytes and FinishBytes: raw []byte buffers (as received from
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
// otherwise src's). See Combine for details.
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
//
// # Collectives and algorithms
//
// A Comm (New) runs collectives over an engine.NetTransport (or a value
// that embeds one, an thunderbolt.Transport; Transport's type keeps
// any other out as the program compiles), on a tag space of their own
// apart from users' tags: AllReduce,
// AllReduceDeadline (bounded staleness: late ranks are left out and every
// rank learns who contributed; Mean divides by that count), Broadcast,
// ReduceTo, AllGather, ReduceScatter, Gather, Scatter and AllToAll, all
// with uneven counts, in typed generic forms and ...Bytes forms that take
// a DType for raw buffers (16-bit floats as uint16, accumulated in
// float32).
//
// AllReduce uses recursive doubling for small messages and, from
// Options.RingMin, a ring reduce-scatter and all-gather whose steps travel
// in Options.Chunk pieces, each reduced as soon as it lands while the next
// ones are still on the wire; in a world of 4 or more that spans
// machines, from Options.HalvingMin up to RingMin, Rabenseifner's reduce-scatter
// by recursive halving and all-gather by recursive doubling
// (AlgorithmHalving), and at every size from HalvingMin where some host
// holds several ranks. Their steps run in host order
// (engine.Topology.Hosts): the ranks of a host take consecutive places,
// however a launcher numbered them, and halving's largest steps are the
// ones between ranks of one host. Any world size works. AlgorithmOneSided (over
// the symmetric heap) and AlgorithmStar (reduce at a star's coordinator,
// which Auto picks on a star of more than two ranks, found with
// engine.Topology) can be chosen. Every element is reduced
// in one fixed order on every rank, so every rank gets the same bits; Sum
// and Prod of float32 and float64 and integer Sum, Prod, Max and Min use
// AVX2 on amd64, lane by lane the same IEEE operations as the portable
// loop. A steady-state AllReduce allocates nothing. Comm.Alloc allocates
// in every rank's symmetric heap together and checks that the ranks got
// the same range, for the transport's Put and Get.
//
// # Isolation, mismatches and lost ranks
//
// Each call takes fresh tags, and a rank drops the messages of calls it
// has left behind (the leftovers of a failed call, a late deadline
// contribution), so they never reach a later call, not even one that
// reuses their tags 65536 calls on. Every message carries its call's
// identity (collective, dtype, op), so ranks that call differently get
// ErrMismatch (*MismatchError names both calls) or ErrLengthMismatch
// instead of a wrong result. With more than 2 ranks only the ranks that receive
// an odd message find the mismatch; a rank whose call fails of anything
// but a lost peer (a mismatch, a length, its ctx) abandons the call, and
// the ranks waiting for its part fail with ErrAbandoned instead of
// waiting, whatever their ctx, however many calls it gave up before they
// got there. A rank whose arguments are refused (ErrDTypeLength, a root
// outside the world, ...) still takes part in the call's numbering and
// abandons it, so the others fail with ErrAbandoned and the next call
// works everywhere.
//
// A lost rank fails the call on every survivor with engine.ErrPeerLost,
// and so does a rank that closed its transport without completing the
// call (one that closes right after its call returned does not disturb
// the others' ends of it). The error names the first rank lost
// (*engine.PeerError's Rank and Cause) even when survivors that gave up
// because of it closed before this rank saw the loss, and lists those in
// ClosedAfter (GOODBYE reports the first loss its sender knew of).
//
// # Profiles
//
// Collective calls label their CPU profile samples with op (allreduce,
// broadcast, ...), algorithm (recursive-doubling, ring, ...) and size:
// record with runtime/pprof or net/http/pprof and read the file with
// "boltmesh profile" or "go tool pprof -tagfocus op=allreduce". The
// labels go over those of the ctx a call is given (the forms without a
// ctx have none), and the goroutine gets its own labels back exactly as
// the call returns, however they were set.
//
// # Failed calls
//
// The ranks of a collective call do not agree on its outcome (that would
// cost another round of messages per call): a rank completes a call once
// it has received every part it needs, whatever the others do after, and
// fails it when its ctx ends, a peer is lost, the ranks' calls differ, or
// another rank gave the call up (ErrAbandoned). So a call can fail on one
// rank and succeed on others. What a rank's error says about the others:
//
//   - AllReduce (AllReduceBytes, AllReduce16, every algorithm), AllGather,
//     ReduceScatter and AllToAll need every rank's data on every rank. A
//     rank whose call fails before it hands the transport any message of
//     the call (its ctx had ended before the call or before its first
//     message, its arguments were refused) keeps every other rank from
//     completing it: the call fails on every rank, and the error says
//     nothing more. Once a rank has sent part of its data, the others may
//     complete the call with it, and its error wraps ErrMayHaveCompleted
//     (a *PartialError). The one-sided allreduce's failures that every
//     rank finds alike in an agreement they all complete (the heap too
//     small, the ranks' lengths or calls differing) do not: no rank
//     completes such a call, and each fails with what it found itself.
//   - In Broadcast, ReduceTo, Gather, Scatter and AllReduceDeadline some
//     ranks need nothing from some others: every error of a world of more
//     than one rank wraps ErrMayHaveCompleted.
//
// An error that does not wrap ErrMayHaveCompleted therefore means that no
// rank completed the call: every rank's call fails (the others' with
// ErrAbandoned, or with the same lost peer) and every rank may retry it.
// After one that does, the ranks must learn which of them completed before
// they retry (an AllReduce of a flag with Max, say). Either way every
// rank's next call works, with or without a ctx: the leftovers of a failed
// call never reach a later one, and a rank that is behind fails each call
// that a faster rank has given up, however many, when it gets there.
package collective
