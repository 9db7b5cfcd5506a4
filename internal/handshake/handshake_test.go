package handshake

import (
	"errors"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/frame"
	"github.com/boltmesh/boltmesh/internal/looptest"
)

// hello is the HELLO of rank in a full mesh of 2 ranks, 1 stream.
func hello(rank uint32) frame.Hello {
	return frame.Hello{Version: frame.Version, World: 2, Rank: rank, Streams: 1, Stream: 0}
}

// run runs the dialer (rank 1, key dk, HELLO dh) against the acceptor
// (rank 0, key ak) over loopback TCP; claim is the acceptor's.
func run(t *testing.T, dk, ak []byte, dh frame.Hello, claim func(rank, stream int) string) (dialErr, acceptErr error, rank int) {
	t.Helper()
	a, b := looptest.TCPPair(t) // not a pipe: its writes wait for the reader, which two refusing ends never are
	d, err := New(a, dk, dh, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	acc, err := New(b, ak, hello(0), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		rank, _, acceptErr = acc.Accept(claim)
		if acceptErr != nil {
			b.Close() // a refused dialer reads no more: let it see the end
		}
	}()
	dialErr = d.Dial(0)
	if dialErr != nil {
		a.Close()
	}
	<-done
	if dialErr == nil && acceptErr == nil {
		if d.Theirs.Rank != 0 || acc.Theirs.Rank != 1 || d.Peer != acc.Raw || acc.Peer != d.Raw {
			t.Fatalf("the ends do not hold each other's HELLO: %+v, %+v", d.Theirs, acc.Theirs)
		}
		if string(d.MAC("x", d.Raw[:], d.Peer[:])) != string(acc.MAC("x", acc.Peer[:], acc.Raw[:])) {
			t.Fatal("the two ends' MACs over the same values differ")
		}
	}
	return dialErr, acceptErr, rank
}

// TestHandshake: the same key agrees; a different key is refused by the
// acceptor (ErrWrongKey, which the dialer learns as a refusal of its
// proof), a taken slot with ErrSlotTaken on both ends, another version
// with ErrVersion at the acceptor; every refusal is a *Error.
func TestHandshake(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	ok := func(int, int) string { return "" }
	if dErr, aErr, rank := run(t, key, key, hello(1), ok); dErr != nil || aErr != nil || rank != 1 {
		t.Fatalf("same key: dial %v, accept %v, rank %d", dErr, aErr, rank)
	}
	var he *Error
	dErr, aErr, _ := run(t, []byte("another key, also thirty-two by"), key, hello(1), ok)
	if !errors.Is(aErr, ErrWrongKey) || !errors.As(aErr, &he) || !he.Local || !errors.Is(aErr, ErrHandshake) {
		t.Fatalf("wrong key, acceptor: %v", aErr)
	}
	if !errors.Is(dErr, ErrWrongKey) || !errors.As(dErr, &he) || he.Local || he.Reason != frame.RejectedText {
		t.Fatalf("wrong key, dialer: %v (told %q)", dErr, he.Reason)
	}
	dErr, aErr, _ = run(t, key, key, hello(1), func(int, int) string { return "taken" })
	if !errors.Is(aErr, ErrSlotTaken) || !errors.Is(dErr, ErrSlotTaken) {
		t.Fatalf("slot taken: dial %v, accept %v", dErr, aErr)
	}
	old := hello(1)
	old.Version--
	if _, aErr, _ = run(t, key, key, old, ok); !errors.Is(aErr, ErrVersion) {
		t.Fatalf("another version: accept %v", aErr)
	}
}

// TestSealing: SealAlways against SealNever cannot agree; neighbours are
// never sealed; keyed ends that leave the host are, by default.
func TestSealing(t *testing.T) {
	h := func(seal uint8, host byte) frame.Hello {
		m := hello(0)
		m.Seal, m.HostID[0] = seal, host
		return m
	}
	keyed := frame.SealKeyed | frame.SealRemote
	for _, c := range []struct {
		mine, theirs frame.Hello
		on, agree    bool
	}{
		{h(frame.SealAlways, 0), h(frame.SealNever, 0), false, false},
		{h(keyed|frame.SealAlways, 1), h(keyed, 1), false, true}, // one host
		{h(keyed, 0), h(keyed, 0), true, true},
		{h(frame.SealRemote, 0), h(keyed, 0), false, true}, // one end has no key
		{h(frame.SealAlways, 0), h(0, 0), true, true},
	} {
		on, why := Sealing(c.mine, c.theirs)
		if on != c.on || (why == "") != c.agree {
			t.Errorf("Sealing(%#x host %d, %#x host %d) = %v %q, want %v, agree %v", c.mine.Seal, c.mine.HostID[0], c.theirs.Seal, c.theirs.HostID[0], on, why, c.on, c.agree)
		}
	}
}
