package stdnet_test

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/bench/stdnet"
)

// meshes connects n in-process ranks.
func meshes(t *testing.T, n int) []*stdnet.Mesh {
	t.Helper()
	lns := make([]*net.TCPListener, n)
	addrs := make([]string, n)
	for r := range n {
		ln, err := stdnet.Listen("127.0.0.1")
		if err != nil {
			t.Fatal(err)
		}
		lns[r], addrs[r] = ln, ln.Addr().String()
	}
	ms := make([]*stdnet.Mesh, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Go(func() { ms[r], errs[r] = stdnet.Connect(r, addrs, lns[r], 5*time.Second) })
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
		t.Cleanup(func() { ms[r].Close() })
	}
	return ms
}

// each runs f on every rank concurrently and fails on any error.
func each(t *testing.T, ms []*stdnet.Mesh, f func(r int, m *stdnet.Mesh) error) {
	t.Helper()
	errs := make([]error, len(ms))
	var wg sync.WaitGroup
	for r, m := range ms {
		wg.Go(func() { errs[r] = f(r, m) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
}

func TestMessagesAndBarrier(t *testing.T) {
	ms := meshes(t, 3)
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16)
	each(t, ms, func(r int, m *stdnet.Mesh) error {
		for k := range 3 {
			to, from := (r+1)%3, (r+2)%3
			n, err := m.Exchange(to, from, big[:len(big)-k], make([]byte, len(big)))
			if err != nil || n != len(big)-k {
				return fmt.Errorf("rank %d: %d bytes, %v", r, n, err)
			}
			if err := m.Barrier(); err != nil {
				return err
			}
		}
		return nil
	})
}

func TestAllReduce(t *testing.T) {
	for _, n := range []int{2, 3, 4} {
		for _, elems := range []int{1, 5, 64 << 10} {
			ms := meshes(t, n)
			each(t, ms, func(r int, m *stdnet.Mesh) error {
				data := make([]float32, elems)
				for i := range data {
					data[i] = float32(r + i%5)
				}
				if err := m.AllReduceSum(data); err != nil {
					return err
				}
				for i, v := range data {
					if want := float32(n*(n-1)/2 + n*(i%5)); v != want {
						return fmt.Errorf("%d ranks, %d elements: rank %d element %d is %v, want %v", n, elems, r, i, v, want)
					}
				}
				return nil
			})
		}
	}
}

func TestPutGet(t *testing.T) {
	ms := meshes(t, 2)
	for _, m := range ms {
		m.Grow(1 << 20)
	}
	src := bytes.Repeat([]byte{7, 8, 9}, 1000)
	if err := ms[0].Put(1, 100, src); err != nil {
		t.Fatal(err)
	}
	if err := ms[0].Quiet(); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(src))
	if err := ms[1].Load(100, got); err != nil || !bytes.Equal(got, src) {
		t.Fatalf("after put and quiet: %v", err)
	}
	clear(got)
	if err := ms[0].Get(1, 100, got); err != nil || !bytes.Equal(got, src) {
		t.Fatalf("get: %v", err)
	}
	// Out of bounds: a get fails at once, a put at the next Quiet; the
	// connection stays usable.
	if err := ms[0].Get(1, 1<<20-1, got); !errors.Is(err, stdnet.ErrOutOfBounds) {
		t.Fatalf("out-of-bounds get: %v", err)
	}
	if err := ms[0].Put(1, 1<<20, src); err != nil {
		t.Fatal(err)
	}
	if err := ms[0].Quiet(); !errors.Is(err, stdnet.ErrOutOfBounds) {
		t.Fatalf("quiet after an out-of-bounds put: %v", err)
	}
	if err := ms[0].Get(1, 100, got); err != nil || !bytes.Equal(got, src) {
		t.Fatalf("get after refusals: %v", err)
	}
}
