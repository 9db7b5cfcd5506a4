package heap_test

import (
	"bytes"
	"testing"
	"unsafe"
)

func TestBytesWriteThrough(t *testing.T) {
	h := newHeap(t, 1<<16)
	a := mustAlloc(t, h, 100, 0)
	b := mustAlloc(t, h, 300, 0)
	pa, err := h.Bytes(a)
	if err != nil {
		t.Fatal(err)
	}
	pb, err := h.Bytes(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(pa) != 100 || cap(pa) != 100 || len(pb) != 300 || cap(pb) != 300 {
		t.Fatalf("Bytes: len/cap %d/%d and %d/%d", len(pa), cap(pa), len(pb), cap(pb))
	}
	for i := range pa {
		pa[i] = 0xA0
	}
	for i := range pb {
		pb[i] = 0xB0
	}
	region := h.Region()
	if &region[a.Offset] != &pa[0] || &region[b.Offset] != &pb[0] {
		t.Fatal("Bytes does not alias Region")
	}
	if !bytes.Equal(region[a.Offset:a.Offset+a.Len], bytes.Repeat([]byte{0xA0}, 100)) ||
		!bytes.Equal(region[b.Offset:b.Offset+b.Len], bytes.Repeat([]byte{0xB0}, 300)) {
		t.Fatal("writes through Bytes are not in Region")
	}
	// And the other way: Region and Slice writes show up in Bytes.
	region[b.Offset+299] = 1
	s, err := h.Slice(a.Offset, 1)
	if err != nil {
		t.Fatal(err)
	}
	s[0] = 2
	if pb[299] != 1 || pa[0] != 2 {
		t.Fatalf("Region/Slice writes not seen through Bytes: %d %d", pb[299], pa[0])
	}
	// Bytes adjacent to a must not reach into b.
	if a.Offset+a.Len > b.Offset {
		t.Fatalf("%+v and %+v overlap", a, b)
	}
}

func TestRegionPageAligned(t *testing.T) {
	h := newHeap(t, 10000)
	r := h.Region()
	if uintptr(unsafe.Pointer(&r[0]))%4096 != 0 {
		t.Fatalf("Region at %p is not page-aligned", &r[0])
	}
	if h.Size()%4096 != 0 || h.Size() < 10000 {
		t.Fatalf("Size %d", h.Size())
	}
}
