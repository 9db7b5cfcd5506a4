package engine_test

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/internal/meshtest"
)

// TestStarAllPairs sends between every ordered pair of a 4-rank star,
// worker to worker included, on several tags at once and with sizes on
// both sides of the deferral threshold and of the longest payload the
// coordinator holds whole (engine.RelayPart), eager and by rendezvous,
// and checks every byte and the per-(source, tag) order.
func TestStarAllPairs(t *testing.T) {
	const n, tags, msgs = 4, 3, 6
	ts := meshtest.Star(t, n, engine.Options{})
	if top := ts[2].Topology(); !top.Star || top.Center != 0 {
		t.Fatalf("Topology() = %+v; want a star centred on 0", top)
	}
	sizes := []int{0, 1, 100, 40 << 10, 300 << 10, 1<<20 + 5, 3<<20 + 7} // the last three relayed in parts
	size := func(from, to, tag, seq int) int { return sizes[(from+to+tag+seq)%len(sizes)] }
	errs := make(chan error, 2*n*n*tags)
	var wg sync.WaitGroup
	for from := range n {
		for to := range n {
			if from == to {
				continue
			}
			for tag := range tags {
				wg.Go(func() {
					for seq := range msgs {
						if err := ts[from].Send(to, tag, pattern(from, to, tag, seq, size(from, to, tag, seq))); err != nil {
							errs <- fmt.Errorf("send %d->%d tag %d: %w", from, to, tag, err)
							return
						}
					}
				})
				wg.Go(func() {
					for seq := range msgs {
						got, err := ts[to].Recv(from, tag)
						if err == nil {
							err = check(got, from, to, tag, seq, size(from, to, tag, seq))
						}
						if err != nil {
							errs <- fmt.Errorf("recv %d->%d tag %d seq %d: %w", from, to, tag, seq, err)
							return
						}
					}
				})
			}
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestStarPutGetBarrier puts from every rank into a slot of every other
// rank's heap, checks after a barrier that every put is visible (the
// barrier's guarantee, through the coordinator), and reads every slot
// back with Get.
func TestStarPutGetBarrier(t *testing.T) {
	const n, slot = 4, 320 << 10 // a slot longer than engine.RelayPart: puts and gets relayed in parts
	ts := meshtest.Star(t, n, engine.Options{})
	bufs := make([]engine.SymmetricBuffer, n)
	for r, tr := range ts {
		b, err := tr.Alloc(n*slot, 64)
		if err != nil {
			t.Fatal(err)
		}
		bufs[r] = b
	}
	if bufs[1].On(0) != bufs[3].On(0) {
		t.Fatalf("asymmetric allocation: %+v vs %+v", bufs[1], bufs[3])
	}
	part := func(b engine.SymmetricBuffer, i int) engine.SymmetricBuffer {
		return engine.SymmetricBuffer{Rank: b.Rank, Offset: b.Offset + uint64(i*slot), Len: slot}
	}
	runRanks(t, n, func(r int) error {
		for to := range n {
			if err := ts[r].Put(part(bufs[r].On(to), r), pattern(r, to, 7, 0, slot)); err != nil {
				return err
			}
		}
		return ts[r].Barrier()
	})
	runRanks(t, n, func(r int) error {
		local, err := ts[r].Bytes(bufs[r])
		if err != nil {
			return err
		}
		for from := range n {
			if err := check(local[from*slot:(from+1)*slot], from, r, 7, 0, slot); err != nil {
				return fmt.Errorf("slot of rank %d after the barrier: %w", from, err)
			}
		}
		got := make([]byte, slot)
		for at := range n {
			if err := ts[r].Get(part(bufs[r].On(at), (r+1)%n), got); err != nil {
				return err
			}
			if err := check(got, (r+1)%n, at, 7, 0, slot); err != nil {
				return fmt.Errorf("get from rank %d: %w", at, err)
			}
		}
		return ts[r].Barrier()
	})
}

// runRanks runs f for every rank at once and fails the test with every
// error.
func runRanks(t *testing.T, n int, f func(r int) error) {
	t.Helper()
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Go(func() { errs[r] = f(r) })
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
}

// TestStarWorkerLeaves closes worker 3 while worker 1 waits for it: the
// coordinator's GONE notice fails worker 1's receive with ErrPeerLost,
// and the remaining ranks keep working, worker to worker included.
func TestStarWorkerLeaves(t *testing.T) {
	ts := meshtest.Star(t, 4, engine.Options{})
	errc := make(chan error, 1)
	go func() {
		_, err := ts[1].Recv(3, 5)
		errc <- err
	}()
	time.Sleep(20 * time.Millisecond)
	ts[3].Close()
	select {
	case err := <-errc:
		if !errors.Is(err, engine.ErrPeerLost) {
			t.Fatalf("recv from the closed worker: %v, want ErrPeerLost", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("recv from the closed worker still blocked after 5 s")
	}
	if err := ts[2].Send(3, 1, []byte("late")); !errors.Is(err, engine.ErrPeerLost) && err != nil {
		t.Fatalf("send to the closed worker: %v", err)
	}
	msg := pattern(2, 1, 9, 0, 5000)
	if err := ts[2].Send(1, 9, msg); err != nil {
		t.Fatal(err)
	}
	got, err := ts[1].Recv(2, 9)
	if err != nil || !bytes.Equal(got, msg) {
		t.Fatalf("worker to worker after a loss: %v", err)
	}
}

// TestStarCoordinatorLost fails every operation of a worker once the
// coordinator is gone, worker-to-worker ones included.
func TestStarCoordinatorLost(t *testing.T) {
	ts := meshtest.Star(t, 3, engine.Options{})
	errc := make(chan error, 1)
	go func() {
		_, err := ts[1].Recv(2, 0)
		errc <- err
	}()
	time.Sleep(20 * time.Millisecond)
	ts[0].Close()
	select {
	case err := <-errc:
		if !errors.Is(err, engine.ErrPeerLost) {
			t.Fatalf("recv from a worker after the coordinator left: %v, want ErrPeerLost", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("recv still blocked 5 s after the coordinator left")
	}
}

// TestStarRefusesMeshRank: a rank built for a full mesh cannot join a
// star, and says why.
func TestStarRefusesMeshRank(t *testing.T) {
	lns, addrs := meshtest.Listeners(t, 1)
	done := make(chan error, 1)
	go func() {
		tr, err := engine.CoordinatorListen(2, lns[0], engine.Options{DialTimeout: 2 * time.Second})
		if tr != nil {
			tr.Close()
		}
		done <- err
	}()
	_, err := engine.FromListener(1, 2, nil, []string{addrs[0], "127.0.0.1:1"}, engine.Options{DialTimeout: 2 * time.Second})
	var he *engine.HandshakeError
	if !errors.As(err, &he) || !bytes.Contains([]byte(he.Reason), []byte("topology")) {
		t.Fatalf("mesh rank joining a star: %v, want a *HandshakeError about the topology", err)
	}
	if err := <-done; err == nil {
		t.Fatal("the coordinator completed without its worker")
	}
}

// TestStarArgs checks the constructors' argument errors.
func TestStarArgs(t *testing.T) {
	var oe *engine.OptionError
	if _, err := engine.CoordinatorListen(2, nil, engine.Options{}); !errors.As(err, &oe) {
		t.Errorf("nil listener: %v", err)
	}
	if _, err := engine.WorkerDial(0, 2, "127.0.0.1:1", engine.Options{}); !errors.As(err, &oe) {
		t.Errorf("worker rank 0: %v", err)
	}
	var ue *engine.UnknownRankError
	if _, err := engine.WorkerDial(2, 2, "127.0.0.1:1", engine.Options{}); !errors.As(err, &ue) {
		t.Errorf("worker rank 2 of 2: %v", err)
	}
	if _, err := engine.WorkerDial(1, engine.MaxStarWorld+1, "127.0.0.1:1", engine.Options{}); !errors.As(err, &oe) {
		t.Errorf("world too large: %v", err)
	}
}

// TestStarWorkerKilled kills a worker process (no GOODBYE, the kernel
// closes its socket): the coordinator tells the other worker, whose
// receive from the dead one fails with ErrPeerLost within seconds, while
// the rest of the star keeps working.
func TestStarWorkerKilled(t *testing.T) {
	lns, addrs := meshtest.Listeners(t, 1)
	addrs = append(addrs, "", "")
	var coord, w1 *engine.NetTransport
	var cerr, werr error
	var wg sync.WaitGroup
	wg.Go(func() { coord, cerr = engine.CoordinatorListen(3, lns[0], engine.Options{}) })
	wg.Go(func() { w1, werr = engine.WorkerDial(1, 3, addrs[0], engine.Options{}) })
	child := startChildEnv(t, "star-worker", 2, nil, addrs, nil)
	wg.Wait()
	if cerr != nil || werr != nil {
		t.Fatalf("coordinator: %v; worker 1: %v", cerr, werr)
	}
	defer coord.Close()
	defer w1.Close()
	errc := make(chan error, 2)
	for _, tr := range []*engine.NetTransport{coord, w1} {
		go func() {
			_, err := tr.Recv(2, 3)
			errc <- err
		}()
	}
	time.Sleep(20 * time.Millisecond)
	killed := time.Now()
	child.Process.Kill()
	for range 2 {
		select {
		case err := <-errc:
			if !errors.Is(err, engine.ErrPeerLost) {
				t.Fatalf("receive from the killed worker: %v, want ErrPeerLost", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("receive from the killed worker still blocked after 5 s")
		}
	}
	t.Logf("both survivors saw the loss %v after the kill", time.Since(killed).Round(time.Millisecond))
	msg := pattern(1, 0, 4, 0, 100<<10)
	if err := w1.Send(0, 4, msg); err != nil {
		t.Fatal(err)
	}
	got, err := coord.Recv(1, 4)
	if err != nil || !bytes.Equal(got, msg) {
		t.Fatalf("worker to coordinator after the loss: %v", err)
	}
}

// TestTopology: a transport says how its world is joined: a star and its
// coordinator, or a full mesh (no center), every rank on loopback here,
// and its neighbours over shared memory or none over TCP.
func TestTopology(t *testing.T) {
	shm := newMesh(t, 2, engine.Options{})[0].Topology()
	tcp := newMesh(t, 2, engine.Options{SharedMemory: engine.SharedMemoryOff})[0].Topology()
	star := meshtest.Star(t, 3, engine.Options{})[1].Topology()
	for _, c := range []struct {
		name string
		got  engine.Topology
		star bool
		nbrs int
	}{{"mesh over shared memory", shm, false, 1}, {"mesh over TCP", tcp, false, 0}, {"star", star, true, 0}} {
		wantCenter := -1
		if c.star {
			wantCenter = 0
		}
		if c.got.Star != c.star || c.got.Center != wantCenter || !c.got.Loopback || len(c.got.Neighbours()) != c.nbrs {
			t.Errorf("%s: Topology() = %+v", c.name, c.got)
		}
	}
	// One link per peer, each with its medium: a star's worker reaches
	// the other worker through the coordinator.
	for _, c := range []struct {
		name string
		got  engine.Topology
		want []engine.Link
	}{
		{"mesh over shared memory", shm, []engine.Link{{Rank: 1, Medium: engine.MediumShm}}},
		{"mesh over TCP", tcp, []engine.Link{{Rank: 1, Medium: engine.MediumTCP}}},
		{"star", star, []engine.Link{{Rank: 0, Medium: engine.MediumTCP}, {Rank: 2, Medium: engine.MediumRelay}}},
	} {
		got := make([]engine.Link, len(c.got.Links))
		for i, l := range c.got.Links {
			got[i] = engine.Link{Rank: l.Rank, Medium: l.Medium} // unsealed on loopback; single copy as the kernel allows
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: Links = %+v, want %+v", c.name, c.got.Links, c.want)
		}
	}
}
