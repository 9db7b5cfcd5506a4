package engine_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/boltmesh/boltmesh/engine"
)

func TestPutGetBasic(t *testing.T) {
	ts := newMesh(t, 3, engine.Options{HeapSize: 8 << 20})
	bufs := make([]engine.SymmetricBuffer, 3)
	for r, tr := range ts {
		b, err := tr.Alloc(1<<20, 0)
		if err != nil {
			t.Fatal(err)
		}
		bufs[r] = b
	}
	if bufs[0] != bufs[1].On(0) || bufs[0] != bufs[2].On(0) {
		t.Fatalf("allocations differ: %+v", bufs)
	}
	msg := pattern(0, 1, 0, 0, 1<<20)
	if err := ts[0].Put(bufs[0].On(1), msg); err != nil {
		t.Fatal(err)
	}
	if err := ts[0].Quiet(); err != nil {
		t.Fatal(err)
	}
	got, _ := ts[1].Bytes(bufs[1])
	if !bytes.Equal(got, msg) {
		t.Fatal("put not visible after Quiet")
	}
	dst := make([]byte, 1<<20)
	if err := ts[2].Get(bufs[2].On(1), dst); err != nil || !bytes.Equal(dst, msg) {
		t.Fatalf("get: %v", err)
	}
	// Local checks before anything goes on the wire.
	var oob *engine.OutOfBoundsError
	if err := ts[0].Put(engine.SymmetricBuffer{Rank: 1, Offset: 8 << 20, Len: 1}, []byte{1}); !errors.As(err, &oob) {
		t.Fatalf("out of bounds put: %v", err)
	}
	var lm *engine.LengthMismatchError
	if err := ts[0].Get(bufs[0].On(1), dst[:5]); !errors.As(err, &lm) {
		t.Fatalf("length mismatch get: %v", err)
	}
	var ur *engine.UnknownRankError
	if err := ts[0].Get(bufs[0].On(7), dst); !errors.As(err, &ur) {
		t.Fatalf("unknown rank: %v", err)
	}
}
