package thunderbolt_test

import (
	"bytes"
	"net"
	"sync"
	"testing"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/internal/meshtest"
	"github.com/boltmesh/boltmesh/thunderbolt"
)

func TestLooksLike(t *testing.T) {
	for _, tc := range []struct {
		ip   string
		want bool
	}{
		{"169.254.10.2", true}, {"10.0.0.7", true}, {"192.168.1.2", false},
		{"127.0.0.1", false}, {"169.253.1.1", false}, {"fe80::1", false}, {"::ffff:169.254.1.1", true},
	} {
		if got := thunderbolt.LooksLike(net.ParseIP(tc.ip)); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.ip, got, tc.want)
		}
	}
	// The real interfaces of this machine: listing them must not fail.
	if _, err := thunderbolt.Interfaces(); err != nil {
		t.Fatal(err)
	}
}

// TestTransport builds a 2-rank Transport on
// loopback: the defaults are in force (several streams, large buffers),
// and a striped message and a small one arrive intact.
func TestTransport(t *testing.T) {
	lns, addrs := meshtest.Listeners(t, 2)
	ts := make([]*thunderbolt.Transport, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for r := range 2 {
		wg.Go(func() { ts[r], errs[r] = thunderbolt.FromListener(r, 2, lns[r], addrs, engine.Options{}) })
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
		defer ts[r].Close()
	}
	o := ts[0].Options()
	if o.Streams != thunderbolt.Streams || o.StripeMin != thunderbolt.StripeMin || o.SocketBuffer != thunderbolt.SocketBuffer {
		t.Fatalf("options %+v lack the Thunderbolt defaults", o)
	}
	if got := thunderbolt.Options(engine.Options{Streams: 5}); got.Streams != 5 {
		t.Fatalf("Options overrode Streams: %d", got.Streams)
	}
	for i, n := range []int{8, 3<<20 + 1} {
		sent := make(chan error, 1) // a striped message goes by rendezvous: Send waits for the receive
		go func() { sent <- ts[0].Send(1, 4, msg(i, n)) }()
		got, err := ts[1].Recv(0, 4)
		if err == nil && !bytes.Equal(got, msg(i, n)) {
			t.Fatalf("message of %d bytes arrived changed", n)
		}
		if err != nil {
			t.Fatalf("message of %d bytes: %v", n, err)
		}
		if err := <-sent; err != nil {
			t.Fatal(err)
		}
	}
}

// msg is message i of n bytes: a pattern that tells messages and
// positions apart.
func msg(i, n int) []byte {
	b := make([]byte, n)
	for j := range b {
		b[j] = byte(i*31 + j*7 + j>>8)
	}
	return b
}
