// Package meshtest builds loopback meshes for the tests of boltmesh's
// packages: listeners on ephemeral ports, and n-rank NetTransports in one
// process that close at the test's cleanup (Mesh, Star, Thunderbolt) or when the
// caller says (Open, for fuzz targets that keep a mesh across
// iterations).
package meshtest

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/thunderbolt"
)

// Listeners binds n loopback listeners on ephemeral ports and returns
// them with their addresses, in rank order.
func Listeners(t testing.TB, n int) ([]net.Listener, []string) {
	t.Helper()
	lns := make([]net.Listener, n)
	addrs := make([]string, n)
	for i := range lns {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns[i], addrs[i] = ln, ln.Addr().String()
	}
	return lns, addrs
}

// Mesh builds an n-rank mesh in this process, every rank with opts, and
// closes it at cleanup.
func Mesh(t testing.TB, n int, opts engine.Options) []*engine.NetTransport {
	t.Helper()
	lns, addrs := Listeners(t, n)
	return build(t, n, func(r int) (*engine.NetTransport, error) {
		return engine.FromListener(r, n, lns[r], addrs, opts)
	})
}

// Hosts builds a mesh in this process whose rank r runs on host hosts[r]
// (Options.HostID; "" for this machine's own), every rank otherwise with
// opts, and closes it at cleanup.
func Hosts(t testing.TB, hosts []string, opts engine.Options) []*engine.NetTransport {
	t.Helper()
	n := len(hosts)
	lns, addrs := Listeners(t, n)
	return build(t, n, func(r int) (*engine.NetTransport, error) {
		o := opts
		o.HostID = hosts[r]
		return engine.FromListener(r, n, lns[r], addrs, o)
	})
}

// Open builds an n-rank mesh in this process, every rank with opts, on
// loopback listeners. The caller closes it (Close); on error nothing is
// left open.
func Open(n int, opts engine.Options) ([]*engine.NetTransport, error) {
	lns := make([]net.Listener, n)
	addrs := make([]string, n)
	for i := range lns {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			for _, l := range lns[:i] {
				l.Close()
			}
			return nil, err
		}
		lns[i], addrs[i] = ln, ln.Addr().String()
	}
	ts, errs := run(n, func(r int) (*engine.NetTransport, error) {
		return engine.FromListener(r, n, lns[r], addrs, opts)
	})
	if err := errors.Join(errs...); err != nil {
		Close(ts)
		return nil, err
	}
	return ts, nil
}

// Routed builds an n-rank mesh in this process, every rank with opts,
// whose ranks dial the addresses route returns for its listeners' (a
// test's relays, say), and returns each rank's transport or error. The
// caller closes it (Close).
func Routed(t testing.TB, n int, opts engine.Options, route func(addrs []string) []string) ([]*engine.NetTransport, []error) {
	t.Helper()
	lns, addrs := Listeners(t, n)
	dial := route(addrs)
	return run(n, func(r int) (*engine.NetTransport, error) {
		return engine.FromListener(r, n, lns[r], dial, opts)
	})
}

// Close closes every transport of ts that is not nil.
func Close(ts []*engine.NetTransport) {
	for _, tr := range ts {
		if tr != nil {
			tr.Close()
		}
	}
}

// Star builds an n-rank star in this process (rank 0 the coordinator on
// a loopback listener, ranks 1..n-1 dialing it), every rank with opts,
// and closes it at cleanup.
func Star(t testing.TB, n int, opts engine.Options) []*engine.NetTransport {
	t.Helper()
	lns, addrs := Listeners(t, 1)
	return build(t, n, func(r int) (*engine.NetTransport, error) {
		if r == 0 {
			return engine.CoordinatorListen(n, lns[0], opts)
		}
		return engine.WorkerDial(r, n, addrs[0], opts)
	})
}

// Thunderbolt builds an n-rank mesh of thunderbolt.Transports in this
// process (thunderbolt.FromListener: its defaults on loopback),
// every rank with opts, and closes it at cleanup.
func Thunderbolt(t testing.TB, n int, opts engine.Options) []*thunderbolt.Transport {
	t.Helper()
	lns, addrs := Listeners(t, n)
	tts := make([]*thunderbolt.Transport, n)
	build(t, n, func(r int) (*engine.NetTransport, error) {
		tt, err := thunderbolt.FromListener(r, n, lns[r], addrs, opts)
		if err != nil {
			return nil, err
		}
		tts[r] = tt
		return tt.NetTransport, nil
	})
	return tts
}

// build runs rank(r) for every rank at once, closes every transport built
// at cleanup, and fails the test on any rank's error.
func build(t testing.TB, n int, rank func(r int) (*engine.NetTransport, error)) []*engine.NetTransport {
	t.Helper()
	ts, errs := run(n, rank)
	t.Cleanup(func() { Close(ts) })
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	return ts
}

// run runs rank(r) for every rank at once; errs[r] names its rank.
func run(n int, rank func(r int) (*engine.NetTransport, error)) (ts []*engine.NetTransport, errs []error) {
	ts, errs = make([]*engine.NetTransport, n), make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Go(func() {
			if ts[r], errs[r] = rank(r); errs[r] != nil {
				errs[r] = fmt.Errorf("rank %d: %w", r, errs[r])
			}
		})
	}
	wg.Wait()
	return ts, errs
}

// Kept is a mesh that outlives one test, for fuzz targets: built (Open)
// on first use, reused while it works, and built again after Reset (an
// iteration that failed may leave it in any state). Close it when the
// target ends, with F.Cleanup(k.Reset). Its methods are safe for
// concurrent use.
type Kept struct {
	N    int            // ranks
	Opts engine.Options // every rank's

	mu sync.Mutex
	ts []*engine.NetTransport
}

// Get returns the mesh, building it if there is none.
func (k *Kept) Get() ([]*engine.NetTransport, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.ts == nil {
		ts, err := Open(k.N, k.Opts)
		if err != nil {
			return nil, err
		}
		k.ts = ts
	}
	return k.ts, nil
}

// Reset closes the mesh; the next Get builds a new one.
func (k *Kept) Reset() {
	k.mu.Lock()
	defer k.mu.Unlock()
	Close(k.ts)
	k.ts = nil
}
