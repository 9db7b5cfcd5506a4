// Package rpcbench is the harness of the RPC benchmarks: boltmesh's agent,
// Go's net/rpc and (in the separate grpcbench module) gRPC-go answer the
// same echo calls over loopback, measured the same way. Each runs either in
// one process (Boltmesh, NetRPC: client and server share the process's
// cores) or across two (RemoteBoltmesh, RemoteNetRPC: the server runs in a
// child process, see StartServer), as RPC between ranks does. It is
// internal and imports nothing beyond the standard library and boltmesh.
package rpcbench

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"net"
	"net/rpc"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/engine"
	bmrpc "github.com/boltmesh/boltmesh/rpc"
)

// Sizes and Callers are the benchmark's axes.
var (
	Sizes   = []int{8, 64 << 10}
	Callers = []int{1, 16, 64}
)

// CallFunc makes one echo call: it returns args back or an error.
type CallFunc func(args []byte) ([]byte, error)

// Impl sets up one implementation: it returns the call function and a
// cleanup.
type Impl func(b *testing.B) (CallFunc, func())

// Name is a sub-benchmark's name.
func Name(impl string, size, callers int) string {
	return fmt.Sprintf("impl=%s/bytes=%d/callers=%d", impl, size, callers)
}

// Run makes b.N echo calls of size bytes from callers goroutines, checks
// every reply, and reports the median round trip (p50-us) and the
// throughput (calls/s) besides ns/op, B/op and allocs/op (per call, of this
// process only: a server in a child process is not counted).
func Run(b *testing.B, impl Impl, size, callers int) {
	call, cleanup := impl(b)
	defer cleanup()
	for range 100 { // warm up the connections and pools
		if _, err := call(make([]byte, size)); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(size))
	b.ReportAllocs()
	lat := make([][]time.Duration, callers)
	errs := make([]error, callers)
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for g := range callers {
		wg.Go(func() { lat[g], errs[g] = caller(call, g, size, b.N, &next) })
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	for _, err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(median(lat).Nanoseconds())/1e3, "p50-us")
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "calls/s")
}

// caller makes calls until n are taken in all, and returns their round
// trips.
func caller(call CallFunc, g, size, n int, next *atomic.Int64) ([]time.Duration, error) {
	args := make([]byte, max(size, 16))[:size]
	for i := range args {
		args[i] = byte(g + i)
	}
	lat := make([]time.Duration, 0, n)
	for i := next.Add(1); i <= int64(n); i = next.Add(1) {
		if size >= 16 {
			binary.LittleEndian.PutUint64(args, uint64(g))
			binary.LittleEndian.PutUint64(args[8:], uint64(i))
		}
		t0 := time.Now()
		reply, err := call(args)
		lat = append(lat, time.Since(t0))
		if err != nil {
			return nil, err
		}
		if !bytes.Equal(reply, args) {
			return nil, fmt.Errorf("caller %d call %d: reply of %d bytes differs from the %d sent", g, i, len(reply), len(args))
		}
	}
	return lat, nil
}

func median(lat [][]time.Duration) time.Duration {
	all := slices.Concat(lat...)
	if len(all) == 0 {
		return 0
	}
	slices.Sort(all)
	return all[len(all)/2]
}

// Boltmesh is two ranks in this process over loopback: rank 0 calls
// rank 1's "echo".
func Boltmesh(b *testing.B) (CallFunc, func()) {
	lns := make([]net.Listener, 2)
	addrs := make([]string, 2)
	for r := range lns {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		lns[r], addrs[r] = ln, ln.Addr().String()
	}
	ts := make([]*engine.NetTransport, 2)
	as := make([]*bmrpc.Agent, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	echo := func(_ context.Context, args []byte) ([]byte, error) { return args, nil }
	for r := range ts {
		wg.Go(func() {
			if ts[r], errs[r] = engine.FromListener(r, 2, lns[r], addrs, engine.Options{}); errs[r] != nil {
				return
			}
			as[r], errs[r] = bmrpc.NewAgent(ts[r], bmrpc.Options{Handlers: map[string]bmrpc.Handler{"echo": echo}, Logger: slog.Default()})
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
	ctx := context.Background()
	call := func(args []byte) ([]byte, error) { return as[0].Call(ctx, 1, "echo", args) }
	return call, func() {
		for _, a := range as {
			wg.Go(func() { a.Shutdown(ctx) }) // every rank at once
		}
		wg.Wait()
		for _, t := range ts {
			t.Close()
		}
	}
}

// Echo is the net/rpc service.
type Echo struct{}

// Echo returns args.
func (Echo) Echo(args []byte, reply *[]byte) error {
	*reply = args
	return nil
}

// NetRPC is Go's net/rpc (gob over one TCP connection) on loopback.
func NetRPC(b *testing.B) (CallFunc, func()) {
	srv := rpc.NewServer()
	if err := srv.Register(Echo{}); err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	var conns []net.Conn
	var mu sync.Mutex
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Go(func() { srv.ServeConn(c) })
		}
	})
	cl, err := rpc.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	return netRPCCall(cl), func() {
		cl.Close()
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	}
}
