// Package heap is the symmetric heap of one boltmesh rank: a page-aligned,
// shared-memory mapping and a deterministic allocator over it, so that the
// same (Offset, Len) names the same buffer on every rank, as shmem_malloc
// does in OpenSHMEM.
//
// # Memory
//
// New maps a shared-memory file descriptor from internal/shm: a memfd on
// Linux and an anonymous shm object on FreeBSD, both sealed so that no
// holder can resize them; on darwin, netbsd and openbsd a file created in
// os.TempDir and unlinked at once (no seals). The descriptor stays open
// (see Heap.FD) so that it can be handed to a peer on the same host, which
// maps it with Map (a *Remote). Close unmaps the region and
// closes the descriptor; every slice the Heap handed out dies with it.
//
// # Allocation
//
// Heap.Alloc is first-fit over a free list sorted by offset, and Heap.Free
// coalesces a freed range with its free neighbours. Nothing depends on
// time, addresses or map iteration order: every rank that makes the same
// sequence of Alloc and Free calls on heaps of the same size gets the same
// Buffers. Offsets are aligned relative to the start of the heap; since the
// mapping is page-aligned, addresses are aligned too for any alignment up
// to the page size.
//
// # Errors
//
// Errors are the sentinels in errors.go, usually wrapped in an
// *AllocError or *RangeError that says which call and which range
// failed; test them with errors.Is and errors.As. Bad input is an error,
// never a panic.
package heap
