package heap_test

import (
	"fmt"

	"github.com/boltmesh/boltmesh/heap"
)

func Example() {
	h, err := heap.New(1 << 20)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer h.Close()

	// Every rank making these calls gets the same Buffers.
	a, _ := h.Alloc(100, 0)   // default alignment: 64
	b, _ := h.Alloc(10, 4096) // page-aligned
	fmt.Println(a, b, h.InUse())

	p, _ := h.Bytes(b) // valid until Free(b) or Close
	copy(p, "symmetric")
	fmt.Printf("%s\n", h.Region()[b.Offset:b.Offset+9])

	_ = h.Free(a)
	err = h.Free(a)
	fmt.Println(err)
	// Output:
	// {0 100} {4096 10} 110
	// symmetric
	// heap: free offset=0 len=100: buffer not allocated
}
