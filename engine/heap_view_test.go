package engine_test

import (
	"reflect"
	"testing"

	"github.com/boltmesh/boltmesh/engine"
)

// TestHeapCannotBeClosedOutside: what NetTransport.Heap hands out shows
// the heap (its size, memory and use) but cannot close it, nor allocate
// or free in it behind the transport's back: the transport owns the heap.
// Before, Heap returned the *heap.Heap itself, whose public Close
// unmapped the memory under the transport's peers.
func TestHeapCannotBeClosedOutside(t *testing.T) {
	tr := newMesh(t, 1, engine.Options{HeapSize: 1 << 20})[0]
	v := tr.Heap()
	typ := reflect.TypeOf(v)
	for _, name := range []string{"Close", "Alloc", "Free"} {
		if _, ok := typ.MethodByName(name); ok {
			t.Errorf("Heap() returns a %v, which has %s", typ, name)
		}
	}
	b, err := tr.Alloc(4096, 0)
	if err != nil {
		t.Fatal(err)
	}
	mine, err := tr.Bytes(b)
	if err != nil {
		t.Fatal(err)
	}
	mine[0] = 42
	s, err := v.Slice(b.Offset, b.Len)
	if err != nil || s[0] != 42 || v.InUse() != 4096 || uint64(len(v.Region())) != v.Size() || v.Size() < 1<<20 {
		t.Errorf("the view: %v, in use %d, region %d of %d bytes", err, v.InUse(), len(v.Region()), v.Size())
	}
}
