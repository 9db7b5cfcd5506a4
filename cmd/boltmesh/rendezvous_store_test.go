package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/internal/c10d"
	"github.com/boltmesh/boltmesh/internal/c10d/c10dtest"
)

func TestMasterStore(t *testing.T) {
	torchrun := membership{rank: 1, world: 2, source: "torchrun", rendezvous: "127.0.0.1:29500"}
	for _, c := range []struct {
		name   string
		flag   string
		m      membership
		env    []string
		ok     bool
		forced bool
	}{
		{"agent store", "", torchrun, []string{"TORCHELASTIC_USE_AGENT_STORE", "True"}, true, true},
		{"lower case", "", torchrun, []string{"TORCHELASTIC_USE_AGENT_STORE", "true"}, true, true},
		{"one", "", torchrun, []string{"TORCHELASTIC_USE_AGENT_STORE", "1"}, true, true},
		{"False", "", torchrun, []string{"TORCHELASTIC_USE_AGENT_STORE", "False"}, true, false},
		{"unset", "", torchrun, nil, true, false},
		{"--rendezvous", "127.0.0.1:1", torchrun, []string{"TORCHELASTIC_USE_AGENT_STORE", "True"}, false, false},
		{"BOLTMESH_RENDEZVOUS", "", torchrun, []string{"BOLTMESH_RENDEZVOUS", "127.0.0.1:1"}, false, false},
		{"mpirun", "", membership{rank: 1, world: 2, source: "openmpi", rendezvous: "127.0.0.1:29500"}, []string{"TORCHELASTIC_USE_AGENT_STORE", "True"}, false, false},
	} {
		at, ok := masterStore(&meshFlags{rendezvous: c.flag}, c.m, envOf(c.env...))
		if ok != c.ok || at.forced != c.forced || ok && at.addr != c.m.rendezvous {
			t.Errorf("%s: %+v, %v; want ok %v forced %v", c.name, at, ok, c.ok, c.forced)
		}
	}
}

func TestStorePrefix(t *testing.T) {
	for _, c := range []struct {
		env  []string
		want string
	}{
		{nil, "/boltmesh/none/attempt_0/"},
		{[]string{"TORCHELASTIC_RUN_ID", "job7", "TORCHELASTIC_RESTART_COUNT", "2"}, "/boltmesh/job7/attempt_2/"},
	} {
		if got := storePrefix(envOf(c.env...)); got != c.want {
			t.Errorf("%v: %q, want %q", c.env, got, c.want)
		}
	}
}

func fakeStore(t *testing.T) *c10dtest.Server {
	t.Helper()
	s, err := c10dtest.Start(c10dtest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func storeClient(t *testing.T, s *c10dtest.Server) *c10d.Client {
	t.Helper()
	c, err := c10d.Dial(context.Background(), s.Addr(), c10d.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestStoreRendezvous: 3 ranks meet through a store and agree on the
// list, each with its unspecified host filled in.
func TestStoreRendezvous(t *testing.T) {
	s := fakeStore(t)
	const world = 3
	lists, errs := make([][]string, world), make([]error, world)
	var wg sync.WaitGroup
	for r := range world {
		st := storeClient(t, s)
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			lists[r], errs[r] = storeRendezvous(ctx, st, "/p/", membership{rank: r, world: world}, fmt.Sprintf(":%d", 7000+r))
		})
	}
	wg.Wait()
	want := []string{"127.0.0.1:7000", "127.0.0.1:7001", "127.0.0.1:7002"}
	for r := range world {
		if errs[r] != nil || !slices.Equal(lists[r], want) {
			t.Errorf("rank %d: %v, %v; want %v", r, lists[r], errs[r], want)
		}
	}
}

// TestStoreEntryMismatch: an entry of another world size, or with no
// address, is errBadEntry.
func TestStoreEntryMismatch(t *testing.T) {
	for name, entry := range map[string]string{
		"world":   `{"world":3,"addr":"127.0.0.1:7001"}`,
		"address": `{"world":2,"addr":"nowhere"}`,
		"json":    `not json`,
	} {
		t.Run(name, func(t *testing.T) {
			s := fakeStore(t)
			s.Set("/p/rank/1", []byte(entry))
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, err := storeRendezvous(ctx, storeClient(t, s), "/p/", membership{rank: 0, world: 2}, "127.0.0.1:7000")
			if !errors.Is(err, errBadEntry) {
				t.Fatalf("%v, want errBadEntry", err)
			}
		})
	}
}

// TestStoreRendezvousTimeout: a rank that never publishes makes the
// others fail at the timeout, not hang.
func TestStoreRendezvousTimeout(t *testing.T) {
	s := fakeStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := storeRendezvous(ctx, storeClient(t, s), "/p/", membership{rank: 0, world: 2}, "127.0.0.1:7000")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("%v, want context.DeadlineExceeded", err)
	}
}

// slowListener delays every Accept, as a busy rank 0 would delay its
// challenge.
type slowListener struct {
	net.Listener
	delay time.Duration
}

func (l slowListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		time.Sleep(l.delay)
	}
	return c, err
}

// TestSlowRankZero: under torchrun without a store, a rank 0 whose
// challenge comes later than storeGrace is asked whether it is a store,
// answers as none, and the rank then joins its rendezvous.
func TestSlowRankZero(t *testing.T) {
	ln := listenLoopback(t)
	var peers0 []string
	var err0 error
	done := make(chan struct{})
	go func() {
		defer close(done)
		peers0, err0 = serveRendezvous(slowListener{ln, storeGrace + 500*time.Millisecond}, 2, "127.0.0.1:7000", nil, 30*time.Second)
	}()
	f := &meshFlags{timeout: 30 * time.Second}
	m := membership{rank: 1, world: 2, source: "torchrun", rendezvous: ln.Addr().String()}
	at, ok := masterStore(f, m, envOf())
	if !ok {
		t.Fatal("masterStore: not a torchrun rendezvous")
	}
	peers1, leave, err := meetAtMaster(f, m, "127.0.0.1:7001", nil, at)
	if err != nil {
		t.Fatal(err)
	}
	leave()
	<-done
	want := []string{"127.0.0.1:7000", "127.0.0.1:7001"}
	if err0 != nil || !slices.Equal(peers0, want) || !slices.Equal(peers1, want) {
		t.Fatalf("rank 0: %v, %v; rank 1: %v; want %v", peers0, err0, peers1, want)
	}
}
