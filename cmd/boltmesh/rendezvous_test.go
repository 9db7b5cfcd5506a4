package main

import (
	"fmt"
	"net"
	"slices"
	"sync"
	"testing"
	"time"
)

// rendezvous runs rank 0's side and world-1 clients with the given keys
// (serverKey for rank 0, keys[r] for rank r) and returns every rank's list
// and error.
func rendezvous(t *testing.T, world int, serverKey []byte, keys [][]byte) ([][]string, []error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lists, errs := make([][]string, world), make([]error, world)
	var wg sync.WaitGroup
	wg.Go(func() { lists[0], errs[0] = serveRendezvous(ln, world, "0.0.0.0:7000", serverKey, 2*time.Second) })
	for r := 1; r < world; r++ {
		wg.Go(func() {
			lists[r], errs[r] = joinRendezvous(ln.Addr().String(), r, world, fmt.Sprintf(":%d", 7000+r), keys[r], 2*time.Second)
		})
	}
	wg.Wait()
	return lists, errs
}

func TestRendezvous(t *testing.T) {
	key := []byte("k")
	lists, errs := rendezvous(t, 3, key, [][]byte{nil, key, key})
	want := []string{"127.0.0.1:7000", "127.0.0.1:7001", "127.0.0.1:7002"}
	for r := range 3 {
		if errs[r] != nil || !slices.Equal(lists[r], want) {
			t.Errorf("rank %d: %v, %v; want %v", r, lists[r], errs[r], want)
		}
	}
}

func TestRendezvousWrongKey(t *testing.T) {
	_, errs := rendezvous(t, 2, []byte("right"), [][]byte{nil, []byte("wrong")})
	if errs[0] == nil || errs[1] == nil {
		t.Fatalf("a rank with the wrong key joined: %v", errs)
	}
}

func TestFillHost(t *testing.T) {
	via := &net.TCPAddr{IP: net.IPv4(10, 0, 0, 2), Port: 1}
	for in, want := range map[string]string{
		":5":          "10.0.0.2:5",
		"0.0.0.0:5":   "10.0.0.2:5",
		"[::]:5":      "10.0.0.2:5",
		"1.2.3.4:5":   "1.2.3.4:5",
		"hostname:5":  "hostname:5",
		"not-an-addr": "not-an-addr",
	} {
		if got := fillHost(in, via); got != want {
			t.Errorf("fillHost(%q) = %q, want %q", in, got, want)
		}
	}
}
