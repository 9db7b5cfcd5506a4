package engine_test

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/frame"
	"github.com/boltmesh/boltmesh/internal/link/sealed"
	"github.com/boltmesh/boltmesh/internal/meshtest"
)

var sealKey = []byte("a sealing mesh key of 32 bytes!!")

// sealedOpts seals every link of a mesh on loopback.
func sealedOpts() engine.Options {
	return engine.Options{SharedMemory: engine.SharedMemoryOff, Seal: engine.SealAlways, MeshKey: sealKey}
}

// relayedMesh builds an n-rank mesh whose connections to rank 0 pass
// through a relay that setup configures first; it fails the test if a
// rank fails.
func relayedMesh(t *testing.T, n int, opts engine.Options, setup func(*relay)) ([]*engine.NetTransport, *relay) {
	t.Helper()
	ts, errs, rel := relayedRun(t, n, opts, setup)
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	return ts, rel
}

// relayedRun is relayedMesh that returns each rank's error.
func relayedRun(t *testing.T, n int, opts engine.Options, setup func(*relay)) ([]*engine.NetTransport, []error, *relay) {
	t.Helper()
	var rel *relay
	ts, errs := meshtest.Routed(t, n, opts, func(addrs []string) []string {
		rel = newRelay(t, addrs[0], setup)
		dial := append([]string(nil), addrs...)
		dial[0] = rel.addr()
		return dial
	})
	t.Cleanup(func() { meshtest.Close(ts) })
	return ts, errs, rel
}

// exchangeAll has every pair of ts (by rank; nil ones are left out) send
// each other a message of n bytes (each its own pattern) and checks every
// byte.
func exchangeAll(t *testing.T, ts []*engine.NetTransport, n int) {
	t.Helper()
	var wg sync.WaitGroup
	for from := range ts {
		for to := range ts {
			if from == to || ts[from] == nil || ts[to] == nil {
				continue
			}
			wg.Go(func() {
				if err := ts[from].Send(to, 3, pattern(from, to, 3, 0, n)); err != nil {
					t.Errorf("send %d->%d: %v", from, to, err)
				}
			})
			wg.Go(func() {
				got, err := ts[to].Recv(from, 3)
				if err != nil {
					t.Errorf("recv %d->%d: %v", from, to, err)
				} else if err := check(got, from, to, 3, 0, n); err != nil {
					t.Errorf("recv %d->%d: %v", from, to, err)
				}
			})
		}
	}
	wg.Wait()
}

// TestSealedMesh: with Seal always, every link is sealed, with the
// cipher this machine prefers; messages of every size arrive intact, and
// what passes on the wire holds none of their bytes.
func TestSealedMesh(t *testing.T) {
	ts, rel := relayedMesh(t, 3, sealedOpts(), nil)
	for _, n := range []int{8, 100000, 4 << 20} {
		exchangeAll(t, ts, n)
	}
	for r, tr := range ts {
		top := tr.Topology()
		want := []int{}
		for p := range ts {
			if p != r {
				want = append(want, p)
			}
		}
		if fmt.Sprint(top.Sealed()) != fmt.Sprint(want) || top.Cipher() != sealed.Preferred().String() {
			t.Errorf("rank %d: Topology().Sealed %v with %q, want %v with %q", r, top.Sealed(), top.Cipher(), want, sealed.Preferred())
		}
	}
	seen := rel.passed()
	if len(seen) < 4<<20 {
		t.Fatalf("the relay saw %d bytes, want the 4 MiB messages' too", len(seen))
	}
	for _, n := range []int{100000, 4 << 20} {
		for from := 1; from < 3; from++ {
			p := pattern(from, 0, 3, 0, n)
			if bytes.Contains(seen, p[n/2:n/2+32]) {
				t.Fatalf("32 bytes of a %d-byte message from rank %d passed the relay in the clear", n, from)
			}
		}
	}
}

// TestSealedUnsealed: by default a mesh on loopback is not sealed, and
// plaintext passes (the check TestSealedMesh relies on can fail).
func TestSealedUnsealed(t *testing.T) {
	opts := sealedOpts()
	opts.Seal = engine.SealAuto
	ts, rel := relayedMesh(t, 2, opts, func(r *relay) { r.plain = true })
	exchangeAll(t, ts, 100000)
	if top := ts[1].Topology(); len(top.Sealed()) != 0 || top.Cipher() != "" {
		t.Fatalf("Topology() says %v sealed with %q on loopback with SealAuto", top.Sealed(), top.Cipher())
	}
	p := pattern(1, 0, 3, 0, 100000)
	if !bytes.Contains(rel.passed(), p[50000:50032]) {
		t.Fatal("an unsealed message did not pass the relay in the clear")
	}
}

// TestSealedTampered has an on-path relay alter the records of rank 1's
// connections to rank 0 after the mesh formed, in each way a relay can.
// Rank 0 drops rank 1 with ErrTampered inside ErrPeerLost, receives no
// altered byte, and goes on working with rank 2.
func TestSealedTampered(t *testing.T) {
	flip := func(rec []byte) []byte { rec[len(rec)/2] ^= 0x40; return rec }
	for _, tc := range []struct {
		name string
		edit func(rec []byte, held *[]byte) [][]byte // once armed, on the first records of rank 1 to rank 0
	}{
		{"flip", func(rec []byte, _ *[]byte) [][]byte { return [][]byte{flip(rec)} }},
		{"flip header", func(rec []byte, _ *[]byte) [][]byte { rec[0] ^= 1; return [][]byte{rec} }},
		{"drop", func(rec []byte, held *[]byte) [][]byte {
			if *held == nil {
				*held = rec
				return nil
			}
			return [][]byte{rec}
		}},
		{"replay", func(rec []byte, _ *[]byte) [][]byte { return [][]byte{rec, rec} }},
		{"reorder", func(rec []byte, held *[]byte) [][]byte {
			if *held == nil {
				*held = rec
				return nil
			}
			return [][]byte{rec, *held}
		}},
		{"cut short", func(rec []byte, _ *[]byte) [][]byte { return [][]byte{rec[:len(rec)-5]} }},
		{"cut inside", func(rec []byte, _ *[]byte) [][]byte { return [][]byte{rec[:len(rec)/2], nil} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var armed atomic.Bool
			var mu sync.Mutex
			held := map[int]*[]byte{}
			ts, _ := relayedMesh(t, 3, sealedOpts(), func(r *relay) {
				r.record = func(rank, stream int, toAcceptor bool, rec []byte) [][]byte {
					if rank != 1 || !toAcceptor || !armed.Load() {
						return [][]byte{rec}
					}
					mu.Lock()
					defer mu.Unlock()
					if held[stream] == nil {
						held[stream] = new([]byte)
					}
					return tc.edit(rec, held[stream])
				}
			})
			exchangeAll(t, ts, 1000)
			armed.Store(true)
			go func() {
				for i := 0; i < 20; i++ {
					if ts[1].Send(0, 5, pattern(1, 0, 5, i, 50000)) != nil {
						return
					}
				}
			}()
			for i := 0; ; i++ {
				got, err := ts[0].Recv(1, 5)
				if err != nil {
					if !errors.Is(err, engine.ErrPeerLost) || !errors.Is(err, engine.ErrTampered) {
						t.Fatalf("rank 0's receive from rank 1: %v, want ErrTampered inside ErrPeerLost", err)
					}
					var te *sealed.TamperError
					if !errors.As(err, &te) {
						t.Fatalf("%v has no *sealed.TamperError", err)
					}
					break
				}
				if err := check(got, 1, 0, 5, i, 50000); err != nil {
					t.Fatalf("message %d passed altered: %v", i, err)
				}
				if i == 19 {
					t.Fatal("every message passed: the relay altered nothing")
				}
			}
			exchangeAll(t, []*engine.NetTransport{ts[0], nil, ts[2]}, 70000)
		})
	}
}

// TestSealDowngrade: a relay that alters the seal flags or the cipher in
// the dialer's HELLO (to have the pair talk in the clear, or with a
// weaker cipher) makes the handshake fail at both ends: the proofs of
// the key cover both HELLOs.
func TestSealDowngrade(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(hello []byte)
	}{
		{"seal flags cleared", func(h []byte) { h[104] = 0 }},
		{"never instead of always", func(h []byte) { h[104] = frame.SealNever }},
		{"cipher changed", func(h []byte) { h[105] ^= 3 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var refused atomic.Pointer[engine.HandshakeError]
			opts := sealedOpts()
			opts.DialTimeout = 2 * time.Second
			opts.OnReject = func(err error) {
				var he *engine.HandshakeError
				if errors.As(err, &he) {
					refused.CompareAndSwap(nil, he)
				}
			}
			_, errs, _ := relayedRun(t, 2, opts, func(r *relay) {
				r.hello = func(toAcceptor bool, payload []byte) {
					if toAcceptor {
						tc.edit(payload)
					}
				}
			})
			if errs[0] == nil || errs[1] == nil {
				t.Fatalf("ranks formed the mesh through the altered HELLO: %v", errs)
			}
			if !errors.Is(errs[1], engine.ErrWrongKey) {
				t.Errorf("the dialer: %v, want ErrWrongKey", errs[1])
			}
			if he := refused.Load(); he == nil || !errors.Is(he, engine.ErrWrongKey) && he.Reason == "" {
				t.Errorf("the acceptor refused with %v, want a refusal", he)
			}
		})
	}
}

// TestSealMismatch: a rank that seals every link and one that seals
// none refuse each other, saying why.
func TestSealMismatch(t *testing.T) {
	lns, addrs := meshtest.Listeners(t, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for r, mode := range []engine.SealMode{engine.SealAlways, engine.SealNever} {
		wg.Go(func() {
			opts := sealedOpts()
			opts.Seal, opts.DialTimeout = mode, 2*time.Second
			tr, err := engine.FromListener(r, 2, lns[r], addrs, opts)
			if tr != nil {
				tr.Close()
			}
			errs[r] = err
		})
	}
	wg.Wait()
	var he *engine.HandshakeError
	if !errors.As(errs[1], &he) || !strings.Contains(he.Reason, "SealNever") {
		t.Fatalf("the dialer: %v, want a refusal that names SealNever", errs[1])
	}
	if errs[0] == nil {
		t.Fatal("the acceptor formed a mesh with a peer it refused")
	}
}

// TestSealOptions: SealAlways needs a key, and Seal takes only its
// values.
func TestSealOptions(t *testing.T) {
	for _, o := range []engine.Options{
		{Seal: engine.SealAlways},
		{Seal: 7, MeshKey: sealKey},
	} {
		_, err := engine.FromListener(0, 1, nil, []string{"127.0.0.1:1"}, o)
		var oe *engine.OptionError
		if !errors.Is(err, engine.ErrOptions) || !errors.As(err, &oe) || oe.Field != "Seal" {
			t.Errorf("Options %+v: %v, want an OptionError for Seal", o.Seal, err)
		}
	}
}

// TestSealingRule is the decision both ends of a connection make from
// their HELLOs.
func TestSealingRule(t *testing.T) {
	host, machine := [frame.HostIDSize]byte{1}, [frame.MachineIDSize]byte{2}
	h := func(seal uint8, sameHost, sameMachine bool) frame.Hello {
		m := frame.Hello{Seal: seal}
		if sameHost {
			m.HostID = host
		}
		if sameMachine {
			m.Machine = machine
		}
		return m
	}
	const (
		keyed  = frame.SealKeyed
		remote = frame.SealRemote
		always = frame.SealAlways
		never  = frame.SealNever
	)
	for _, tc := range []struct {
		name         string
		mine, theirs frame.Hello
		on           bool
		refused      bool
		warned       bool // logged as a link that leaves the host unsealed
	}{
		{"auto, keyed, remote", h(keyed|remote, false, false), h(keyed|remote, false, false), true, false, false},
		{"auto, keyed, one end sees remote", h(keyed, false, false), h(keyed|remote, false, false), true, false, false},
		{"auto, keyed, loopback", h(keyed, false, false), h(keyed, false, false), false, false, false},
		{"auto, keyed, loopback, hosts differ", h(keyed, true, false), frame.Hello{Seal: keyed, HostID: [frame.HostIDSize]byte{3}}, false, false, false},
		{"auto, keyless, remote", h(remote, false, false), h(remote, false, false), false, false, true},
		{"auto, keyed, remote, same machine", h(keyed|remote, false, true), h(keyed|remote, false, true), false, false, false},
		{"always, loopback", h(always|keyed, false, false), h(keyed, false, false), true, false, false},
		{"always, neighbours", h(always|keyed, true, true), h(always|keyed, true, true), false, false, false},
		{"never beats auto", h(never|keyed|remote, false, false), h(keyed|remote, false, false), false, false, true},
		{"never, loopback", h(never|keyed, false, false), h(keyed, false, false), false, false, false},
		{"always against never", h(always|keyed, false, false), h(never|keyed, false, false), false, true, false},
	} {
		for _, swap := range []bool{false, true} {
			mine, theirs := tc.mine, tc.theirs
			if swap {
				mine, theirs = theirs, mine
			}
			on, why := engine.Sealing(mine, theirs)
			if on != tc.on || (why != "") != tc.refused {
				t.Errorf("%s (swapped %v): sealed %v, refusal %q; want %v, refused %v", tc.name, swap, on, why, tc.on, tc.refused)
			}
			if w := engine.UnsealedWarned(mine, theirs); w != tc.warned {
				t.Errorf("%s (swapped %v): warned %v, want %v", tc.name, swap, w, tc.warned)
			}
		}
	}
}

// TestSealLoopbackHosts: ranks on loopback that name different hosts
// (HostID, as an emulation of several hosts on one machine does) are not
// sealed by SealAuto, as documented, and are by SealAlways.
func TestSealLoopbackHosts(t *testing.T) {
	for _, tc := range []struct {
		seal engine.SealMode
		want string
	}{{engine.SealAuto, "[]"}, {engine.SealAlways, "[1]"}} {
		ts := meshtest.Hosts(t, []string{"host-a", "host-b"}, engine.Options{MeshKey: sealKey, Seal: tc.seal})
		exchangeAll(t, ts, 100000)
		if got := fmt.Sprint(ts[0].Topology().Sealed()); got != tc.want {
			t.Errorf("Seal %v: rank 0's sealed peers %s, want %s", tc.seal, got, tc.want)
		}
	}
}

// TestSealedPutGet: one-sided puts and gets over sealed links move every
// byte intact.
func TestSealedPutGet(t *testing.T) {
	ts := newMesh(t, 2, sealedOpts())
	const n = 3 << 20
	bufs := make([]engine.SymmetricBuffer, 2)
	for r, tr := range ts {
		b, err := tr.Alloc(n, 0)
		if err != nil {
			t.Fatal(err)
		}
		bufs[r] = b
	}
	dst := bufs[1]
	dst.Rank = 1
	want := pattern(0, 1, 0, 0, n)
	if err := ts[0].Put(dst, want); err != nil {
		t.Fatal(err)
	}
	if err := ts[0].Quiet(); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, n)
	if err := ts[0].Get(dst, got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("a get over a sealed link returned other bytes than the put wrote")
	}
}

// TestSealedKeyUpdates forces key updates every few records on every
// sealed link, mid-stream, and checks the data across them, with each
// batch of records sealed and opened by the caller alone and by a crew.
func TestSealedKeyUpdates(t *testing.T) {
	for _, crew := range []int{1, 4} {
		t.Run(fmt.Sprintf("crew=%d", crew), func(t *testing.T) {
			engine.SetSealOptions(sealed.Options{Limits: sealed.Limits{Records: 5, Bytes: 1 << 20}, Crew: crew})
			defer engine.SetSealOptions(sealed.Options{})
			ts := newMesh(t, 3, sealedOpts())
			for _, n := range []int{8, 300000, 5 << 20} {
				exchangeAll(t, ts, n)
			}
		})
	}
}

// TestSealCrew: a crew only where a rank's share of the cores leaves
// room for one.
func TestSealCrew(t *testing.T) {
	for _, tc := range []struct{ cpus, local, want int }{
		{2, 2, 1}, {2, 1, 1}, {4, 1, 2}, {16, 2, 4}, {16, 4, 2}, {16, 8, 1}, {16, 16, 1}, {64, 1, 4}, {16, 0, 4},
	} {
		if got := engine.SealCrew(tc.cpus, tc.local); got != tc.want {
			t.Errorf("SealCrew(%d cores, %d local ranks) = %d, want %d", tc.cpus, tc.local, got, tc.want)
		}
	}
}

// TestSealedStar: a star's links are sealed too; workers' frames to
// each other pass the coordinator sealed both ways, relayed in parts. A relay that alters
// worker 1's records makes the coordinator drop worker 1 with
// ErrTampered, and worker 2 goes on with the coordinator.
func TestSealedStar(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var armed atomic.Bool
	rel := newRelay(t, ln.Addr().String(), func(r *relay) {
		r.record = func(rank, _ int, toAcceptor bool, rec []byte) [][]byte {
			if rank == 1 && toAcceptor && armed.Load() {
				rec[len(rec)-1] ^= 1
			}
			return [][]byte{rec}
		}
	})
	opts := sealedOpts()
	ts := make([]*engine.NetTransport, 3)
	errs := make([]error, 3)
	var wg sync.WaitGroup
	wg.Go(func() { ts[0], errs[0] = engine.CoordinatorListen(3, ln, opts) })
	for r := 1; r < 3; r++ {
		wg.Go(func() { ts[r], errs[r] = engine.WorkerDial(r, 3, rel.addr(), opts) })
	}
	wg.Wait()
	t.Cleanup(func() { meshtest.Close(ts) })
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	exchangeAll(t, ts, engine.RelayPart+100000) // relayed in parts between the workers
	for r, want := range []string{"[1 2]", "[0]", "[0]"} {
		if top := ts[r].Topology(); fmt.Sprint(top.Sealed()) != want {
			t.Errorf("rank %d: Topology().Sealed %v, want %s", r, top.Sealed(), want)
		}
	}
	armed.Store(true)
	go ts[1].Send(0, 6, pattern(1, 0, 6, 0, 1000))
	if _, err := ts[0].Recv(1, 6); !errors.Is(err, engine.ErrPeerLost) || !errors.Is(err, engine.ErrTampered) {
		t.Fatalf("the coordinator's receive from worker 1: %v, want ErrTampered inside ErrPeerLost", err)
	}
	exchangeAll(t, []*engine.NetTransport{ts[0], nil, ts[2]}, 70000)
}
