package engine_test

import (
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/engine"
)

// idleStrangers opens n connections spread over addrs that never send a
// byte, and returns a function that closes them (also run at cleanup).
func idleStrangers(t testing.TB, addrs []string, n int) func() {
	t.Helper()
	conns, err := dialStrangers(addrs, n)
	release := func() {
		for _, c := range conns {
			c.Close()
		}
	}
	if err != nil {
		release()
		t.Fatal(err)
	}
	var once sync.Once
	t.Cleanup(func() { once.Do(release) })
	return func() { once.Do(release) }
}

// dialStrangers opens n idle connections spread over addrs; on an error
// it returns those it opened with it.
func dialStrangers(addrs []string, n int) ([]net.Conn, error) {
	conns := make([]net.Conn, 0, n)
	for i := range n {
		c, err := net.DialTimeout("tcp", addrs[i%len(addrs)], 5*time.Second)
		if err != nil {
			return conns, fmt.Errorf("stranger %d: %w", i, err)
		}
		conns = append(conns, c)
	}
	return conns, nil
}

// formWithStrangers builds an n-rank mesh while strangers idle
// connections to every listener that accepts (every rank but the last),
// opened before any rank starts or, if during, while they start, and
// returns how long the mesh took to form, with the mesh (closed at
// cleanup).
func formWithStrangers(t testing.TB, n, strangers int, during bool, opts engine.Options) (time.Duration, []*engine.NetTransport) {
	t.Helper()
	lns, addrs := listeners(t, n)
	targets := addrs[:max(n-1, 1)]
	if strangers > 0 && !during {
		idleStrangers(t, targets, strangers)
	}
	ts := make([]*engine.NetTransport, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := time.Now()
	var conns []net.Conn
	var sg sync.WaitGroup
	if during { // those that come after the listener closed are refused: no matter
		sg.Go(func() { conns, _ = dialStrangers(targets, strangers) })
	}
	for r := range n {
		wg.Go(func() { ts[r], errs[r] = engine.FromListener(r, n, lns[r], addrs, opts) })
	}
	wg.Wait()
	took := time.Since(start)
	sg.Wait()
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
		for _, tr := range ts {
			if tr != nil {
				tr.Close()
			}
		}
	})
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	return took, ts
}

// TestIdleStrangersDoNotDelayFormation: strangers that connect and say
// nothing hold a handshake each until Options.HandshakeTimeout; the mesh
// must form without waiting for them. HandshakeTimeout is a minute, so
// a mesh that waited for them would take that long; the bound below only
// catches that hang, it measures no speed (see BenchmarkFormation).
func TestIdleStrangersDoNotDelayFormation(t *testing.T) {
	for _, n := range []int{2, 4} {
		t.Run(fmt.Sprintf("ranks=%d", n), func(t *testing.T) {
			opts := engine.Options{HandshakeTimeout: time.Minute, DialTimeout: 2 * time.Minute, Logger: discardLogger}
			took, ts := formWithStrangers(t, n, 200, false, opts)
			if took > 30*time.Second {
				t.Fatalf("the mesh took %v to form with 200 idle strangers connected (handshake timeout 1 min): it waited for them", took)
			}
			barrierAll(t, ts)
		})
	}
}

// BenchmarkFormation measures how long a mesh takes to form on loopback,
// alone and with 200 idle strangers connected to the listeners before the
// ranks start ("before") or connecting while they do ("while"), with
// default Options (HandshakeTimeout 5 s).
func BenchmarkFormation(b *testing.B) {
	for _, n := range []int{2, 4} {
		for _, c := range []struct {
			name      string
			strangers int
			during    bool
		}{{"alone", 0, false}, {"200-before", 200, false}, {"200-while", 200, true}} {
			b.Run(fmt.Sprintf("ranks=%d/strangers=%s", n, c.name), func(b *testing.B) {
				var total time.Duration
				for b.Loop() {
					took, ts := formWithStrangers(b, n, c.strangers, c.during, engine.Options{Logger: discardLogger})
					total += took
					b.StopTimer()
					for _, tr := range ts {
						tr.Close()
					}
					b.StartTimer()
				}
				b.ReportMetric(float64(total.Microseconds())/1e3/float64(b.N), "ms/form")
			})
		}
	}
}
