package bench

import "context"

// Endpoint is one rank's handle on an implementation under test: the
// operations the suites' workloads are written against, implemented over
// boltmesh and over the stdnet baseline alike. A suite that needs more
// adds a method here and to both implementations (as RPC was), or
// type-asserts.
type Endpoint interface {
	// Impl is ImplBoltmesh or ImplStdnet.
	Impl() string
	Rank() int
	Ranks() int
	// Send delivers p to rank to; p may be reused on return. Messages
	// between two ranks arrive in order.
	Send(to int, p []byte) error
	// RecvInto receives the next message from rank from into dst.
	RecvInto(from int, dst []byte) (int, error)
	// Barrier returns when every rank has entered it.
	Barrier() error
	// AllReduceSum sums data element-wise across all ranks, in place.
	// Labels on ctx are kept on the calling goroutine afterwards.
	AllReduceSum(ctx context.Context, data []float32) error
	// Broadcast copies root's data into every rank's data, whose length
	// is the same on every rank.
	Broadcast(ctx context.Context, root int, data []byte) error
	// NewRegion allocates size bytes on every rank (a collective call):
	// the same region, addressable on any rank with Put and Get.
	NewRegion(size int) (Region, error)
	// RPC returns this rank's RPC service, started by the first call and
	// kept until the run ends. Every rank calls it at the same point (a
	// case's Start), so every rank serves before the harness lets any
	// rank call.
	RPC() (RPC, error)
}

// RPC calls the harness's functions on other ranks. Every rank serves
// echo, which returns its arguments unchanged.
type RPC interface {
	// Echo calls echo on rank to with args and returns the reply, valid
	// until the next Echo. args may be reused on return.
	Echo(ctx context.Context, to int, args []byte) ([]byte, error)
}

// Region is memory of the same size on every rank that a rank reads and
// writes remotely without the owner taking part (a symmetric heap buffer).
type Region interface {
	// Put writes src (the region's size) into rank to's copy; it is
	// visible there after Quiet.
	Put(to int, src []byte) error
	// Get reads rank from's copy into dst.
	Get(from int, dst []byte) error
	// Quiet waits until every Put this rank issued is visible.
	Quiet() error
	// Load copies this rank's own copy into dst; Store copies src into it.
	Load(dst []byte) error
	Store(src []byte) error
	// Free releases the region on this rank; every rank frees it, in the
	// same order as the allocations.
	Free() error
}
