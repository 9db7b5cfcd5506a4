package bench

import (
	"context"
	"fmt"
	"slices"
	"sync"
)

// Suite is a family of benchmark ops run at a list of message sizes, on
// every implementation the Config asks for.
type Suite struct {
	Name string
	// Doc is a one-line description for --help.
	Doc string
	// Sizes are the default message sizes in bytes; QuickSizes those of a
	// quick run (nil: Sizes).
	Sizes, QuickSizes []int
	// FixedSizes, if set, replace any size list (a barrier moves no
	// payload: {0}).
	FixedSizes []int
	// Align rounds sizes down to a multiple (at least Align): 4 for
	// float32 data.
	Align int
	// MinRanks is the fewest ranks the suite needs; smaller worlds skip it.
	MinRanks int
	// Impls are the implementations the suite runs on (nil: every one
	// the Config asks for).
	Impls []string
	// Ops are measured in order at each size.
	Ops []Op
}

// Op is one measured operation of a suite.
type Op struct {
	Name string
	// BusFactor converts algbw to busbw for a world of n ranks; nil is 1.
	BusFactor func(n int) float64
	// Throughput marks ops whose figure of merit is bandwidth rather than
	// latency (a stream: one iteration is a receive from a full pipe, so
	// its p50 says little); reports compare them by GB/s.
	Throughput bool
	// Messages, if set, is the number of messages one iteration delivers
	// in a world of n ranks: the result then carries a message rate
	// (Result.MsgRate), and tables show it in place of the bandwidth.
	Messages func(n int) int
	// Start prepares one case on this rank. Every rank calls it, in the
	// same order, so it may make collective calls (allocations).
	Start func(c *Case) (Body, error)
}

// Case is what a Body is built from: the case being measured and the
// endpoint that runs its workload.
type Case struct {
	Suite, Op, Impl string
	Size            int
	EP              Endpoint
	// Ctx carries the case's profile labels (op, suite, impl, size), which
	// are also set on the goroutine running the loops.
	Ctx context.Context
}

// Body is one case's workload on one rank.
type Body interface {
	// Iter runs iteration i on this rank (i < 0: warm-up, not timed). A
	// *CheckError reports bytes that were not the ones sent: the case
	// fails but the run goes on in step with the other ranks. Any other
	// error aborts the run.
	Iter(i int) error
	// Finish is called on every rank after the timed loop and a control
	// barrier (which orders puts), with the number of timed iterations. It
	// makes the final data checks and releases the case's resources.
	Finish(iters int) error
}

// Preparer is implemented by bodies that need untimed work before each
// iteration (restoring an in-place buffer): Prepare(i) runs just before
// Iter(i), outside the timing.
type Preparer interface {
	Prepare(i int) error
}

var registry struct {
	mu     sync.Mutex
	suites map[string]*Suite
}

// Register adds a suite; it panics if the name is taken or the suite has
// no ops, since both are programming errors found at init.
func Register(s *Suite) {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	if registry.suites == nil {
		registry.suites = make(map[string]*Suite)
	}
	if s.Name == "" || len(s.Ops) == 0 || registry.suites[s.Name] != nil {
		panic(fmt.Sprintf("bench: bad or duplicate suite %q", s.Name))
	}
	registry.suites[s.Name] = s
}

// Lookup returns the suite registered under name, or nil.
func Lookup(name string) *Suite {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	return registry.suites[name]
}

// Names returns the registered suite names: DefaultSuites' order first,
// then the others sorted.
func Names() []string {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	var names, rest []string
	for _, n := range DefaultSuites {
		if registry.suites[n] != nil {
			names = append(names, n)
		}
	}
	for n := range registry.suites {
		if !slices.Contains(names, n) {
			rest = append(rest, n)
		}
	}
	slices.Sort(rest)
	return append(names, rest...)
}
