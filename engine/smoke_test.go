package engine_test

import (
	"bytes"
	"testing"

	"github.com/boltmesh/boltmesh/engine"
)

func TestSmoke(t *testing.T) {
	ts := newMesh(t, 2, engine.Options{})
	msg := []byte("hello")
	if err := ts[0].Send(1, 7, msg); err != nil {
		t.Fatal(err)
	}
	got, err := ts[1].Recv(0, 7)
	if err != nil || !bytes.Equal(got, msg) {
		t.Fatalf("got %q %v", got, err)
	}
	if err := ts[1].Send(0, 7, bytes.Repeat([]byte{1}, 1<<20)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 2<<20)
	n, err := ts[0].RecvInto(1, 7, buf)
	if err != nil || n != 1<<20 {
		t.Fatal(n, err)
	}
	errc := make(chan error, 2)
	for _, tr := range ts {
		go func() { errc <- tr.Barrier() }()
	}
	for range 2 {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
}
