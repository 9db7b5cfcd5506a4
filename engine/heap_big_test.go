package engine_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/boltmesh/boltmesh/engine"
	"golang.org/x/sys/unix"
)

// TestHeapBeyond4GiB puts and gets across ranks at offsets past 4 GiB:
// offsets and lengths are 64-bit on the wire. The heaps are sparse
// (memfd), so only the touched pages cost memory.
func TestHeapBeyond4GiB(t *testing.T) {
	if testing.Short() {
		t.Skip("maps two 5 GiB heaps")
	}
	const size = 5 << 30
	lns, addrs := listeners(t, 2)
	ts := make([]*engine.NetTransport, 2)
	errc := make(chan error, 2)
	for r := range ts {
		go func() {
			var err error
			ts[r], err = engine.FromListener(r, 2, lns[r], addrs, engine.Options{HeapSize: size})
			errc <- err
		}()
	}
	for range ts {
		if err := <-errc; err != nil {
			for _, tr := range ts {
				if tr != nil {
					tr.Close()
				}
			}
			if errors.Is(err, unix.ENOMEM) || errors.Is(err, unix.ENOSPC) {
				t.Skipf("cannot map a 5 GiB heap here: %v", err)
			}
			t.Fatal(err)
		}
	}
	defer ts[0].Close()
	defer ts[1].Close()
	buf := engine.SymmetricBuffer{Rank: 1, Offset: size - 3<<20 - 4096, Len: 3 << 20}
	msg := pattern(0, 1, 9, 0, int(buf.Len))
	if err := ts[0].Put(buf, msg); err != nil {
		t.Fatal(err)
	}
	if err := ts[0].Quiet(); err != nil {
		t.Fatal(err)
	}
	view := ts[1].Heap().Region()[buf.Offset : buf.Offset+buf.Len]
	if !bytes.Equal(view, msg) {
		t.Fatal("put past 4 GiB did not land at its offset")
	}
	got := make([]byte, buf.Len)
	if err := ts[0].Get(buf, got); err != nil || !bytes.Equal(got, msg) {
		t.Fatalf("get past 4 GiB: %v", err)
	}
}
