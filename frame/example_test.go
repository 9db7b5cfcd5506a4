package frame_test

import (
	"errors"
	"fmt"

	"github.com/boltmesh/boltmesh/frame"
)

func Example() {
	// Sender: describe a 5-byte tagged message from rank 3 and encode it.
	h := frame.Header{Kind: frame.KindSend, Src: 3, Tag: 7, Aux: 1, Length: 5}
	var buf [frame.HeaderSize]byte
	h.Encode(&buf)
	fmt.Printf("% x\n", buf[:16])
	fmt.Printf("% x\n", buf[16:])

	// Receiver: decode and validate, bounding payloads at 1 MiB.
	got, err := frame.Decode(buf[:], 1<<20)
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	fmt.Printf("%v src=%d tag=%d aux=%d len=%d\n", got.Kind, got.Src, got.Tag, got.Aux, got.Length)

	// A header with an undefined kind is rejected.
	buf[0] = 200
	_, err = frame.Decode(buf[:], 1<<20)
	var de *frame.DecodeError
	fmt.Println(errors.Is(err, frame.ErrUnknownKind), errors.As(err, &de) && de.Field == "kind")
	fmt.Println(err)
	// Output:
	// 04 00 00 00 03 00 00 00 07 00 00 00 01 00 00 00
	// 00 00 00 00 00 00 00 00 05 00 00 00 00 00 00 00
	// SEND src=3 tag=7 aux=1 len=5
	// true true
	// frame: unknown kind: KIND(200) kind=200
}
