package engine_test

import (
	"bytes"
	"crypto/hmac"
	"errors"
	"math"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/frame"
)

// requireOutOfBounds checks that err is a local *OutOfBoundsError with the
// given fields.
func requireOutOfBounds(t *testing.T, what string, err error, rank int, off, n, size uint64) {
	t.Helper()
	var oe *engine.OutOfBoundsError
	if !errors.Is(err, engine.ErrOutOfBounds) || !errors.As(err, &oe) {
		t.Errorf("%s: got %v, want an *OutOfBoundsError", what, err)
		return
	}
	if oe.Rank != rank || oe.Offset != off || oe.Len != n || oe.HeapSize != size {
		t.Errorf("%s: got %+v, want Rank %d Offset %d Len %d HeapSize %d", what, *oe, rank, off, n, size)
	}
}

// requireLengthMismatch checks that err is a *LengthMismatchError.
func requireLengthMismatch(t *testing.T, what string, err error, expected, got uint64) {
	t.Helper()
	var le *engine.LengthMismatchError
	if !errors.Is(err, engine.ErrLengthMismatch) || !errors.As(err, &le) {
		t.Errorf("%s: got %v, want a *LengthMismatchError", what, err)
		return
	}
	if le.Expected != expected || le.Got != got {
		t.Errorf("%s: got %+v, want Expected %d Got %d", what, *le, expected, got)
	}
}

// requireRemoteRefusal checks that err is a *RemoteError of op by rank
// wrapping ErrOutOfBounds.
func requireRemoteRefusal(t *testing.T, what string, err error, op string, rank int) {
	t.Helper()
	var re *engine.RemoteError
	if !errors.Is(err, engine.ErrOutOfBounds) || !errors.As(err, &re) {
		t.Fatalf("%s: got %v, want a *RemoteError wrapping ErrOutOfBounds", what, err)
	}
	if re.Op != op || re.Rank != rank || re.Reason == "" {
		t.Errorf("%s: got %+v, want Op %q Rank %d and a reason", what, *re, op, rank)
	}
	var oe *engine.OutOfBoundsError
	if errors.As(err, &oe) {
		t.Errorf("%s: a remote refusal came back as a local *OutOfBoundsError %v", what, oe)
	}
}

// requireZero fails unless every byte of b is zero.
func requireZero(t *testing.T, what string, b []byte) {
	t.Helper()
	if i := nonZero(b); i >= 0 {
		t.Fatalf("%s: byte %d of %d is %#x, not zero", what, i, len(b), b[i])
	}
}

// nonZero returns the index of the first non-zero byte of b, or -1.
func nonZero(b []byte) int {
	for i, c := range b {
		if c != 0 {
			return i
		}
	}
	return -1
}

func TestHeapErrorsLocal(t *testing.T) {
	ts := watchedMesh(t, 2, engine.Options{HeapSize: 1 << 20})
	size := ts[0].Heap().Size()
	big := make([]byte, 100)
	for _, target := range []int{0, 1} { // self (no wire) and a peer
		tr := ts[0]
		cases := []struct {
			name string
			off  uint64
			n    int
		}{
			{"past the end", size - 10, 100},
			{"at the end", size, 1},
			{"beyond the end, empty", size + 1, 0},
			{"offset+len overflows", math.MaxUint64 - 5, 16},
			{"max offset", math.MaxUint64, 1},
		}
		for _, c := range cases {
			b := engine.SymmetricBuffer{Rank: target, Offset: c.off, Len: uint64(c.n)}
			requireOutOfBounds(t, "put "+c.name, tr.Put(b, big[:c.n]), target, c.off, uint64(c.n), size)
			requireOutOfBounds(t, "get "+c.name, tr.Get(b, big[:c.n]), target, c.off, uint64(c.n), size)
			_, err := tr.PutNB(b, big[:c.n])
			requireOutOfBounds(t, "putnb "+c.name, err, target, c.off, uint64(c.n), size)
			_, err = tr.GetNB(b, big[:c.n])
			requireOutOfBounds(t, "getnb "+c.name, err, target, c.off, uint64(c.n), size)
		}
		// The last byte and an empty range at the very end are in bounds.
		if err := tr.Put(engine.SymmetricBuffer{Rank: target, Offset: size - 1, Len: 1}, []byte{7}); err != nil {
			t.Errorf("put of the last byte: %v", err)
		}
		if err := tr.Get(engine.SymmetricBuffer{Rank: target, Offset: size, Len: 0}, nil); err != nil {
			t.Errorf("empty get at the end: %v", err)
		}
		got := make([]byte, 1)
		if err := tr.Get(engine.SymmetricBuffer{Rank: target, Offset: size - 1, Len: 1}, got); err != nil || got[0] != 7 {
			t.Errorf("get of the last byte: %v, %v", got, err)
		}

		b := engine.SymmetricBuffer{Rank: target, Offset: 0, Len: 100}
		requireLengthMismatch(t, "put short", tr.Put(b, big[:50]), 100, 50)
		requireLengthMismatch(t, "get long", tr.Get(engine.SymmetricBuffer{Rank: target, Len: 10}, big), 10, 100)
		_, err := tr.PutNB(b, nil)
		requireLengthMismatch(t, "putnb empty", err, 100, 0)
		_, err = tr.GetNB(b, big[:99])
		requireLengthMismatch(t, "getnb short", err, 100, 99)
	}
	for _, r := range []int{-1, 2, 1 << 30} {
		b := engine.SymmetricBuffer{Rank: r, Len: 1}
		requireUnknownRank(t, "put", ts[0].Put(b, big[:1]), r, 2)
		requireUnknownRank(t, "get", ts[0].Get(b, big[:1]), r, 2)
		_, err := ts[0].PutNB(b, big[:1])
		requireUnknownRank(t, "putnb", err, r, 2)
		_, err = ts[1].GetNB(b, big[:1])
		requireUnknownRank(t, "getnb", err, r, 2)
	}
	// Nothing was refused remotely: the local checks kept it all off the wire.
	for _, tr := range ts {
		if err := tr.Quiet(); err != nil {
			t.Errorf("rank %d: Quiet after local refusals: %v", tr.Rank(), err)
		}
	}
	barrierAll(t, ts)
}

// heapMesh2 builds a two-rank mesh whose ranks have the given options.
func heapMesh2(t *testing.T, o0, o1 engine.Options) []*engine.NetTransport {
	t.Helper()
	lns, addrs := listeners(t, 2)
	waits := []func() (*engine.NetTransport, error){
		startRank(t, 0, 2, lns[0], addrs, o0),
		startRank(t, 1, 2, lns[1], addrs, o1),
	}
	ts := make([]*engine.NetTransport, 2)
	for r, wait := range waits {
		var err error
		if ts[r], err = wait(); err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	watchdog(t, 10*time.Second, ts...)
	return ts
}

// TestHeapRemoteRefusal: over TCP, a put or get past the target's heap
// (but inside the sender's) is refused by the target.
func TestHeapRemoteRefusal(t *testing.T) {
	off := engine.SharedMemoryOff
	ts := heapMesh2(t, engine.Options{HeapSize: 1 << 20, SharedMemory: off}, engine.Options{HeapSize: 64 << 20, SharedMemory: off})
	small, large := ts[0].Heap().Size(), ts[1].Heap().Size()
	if small != 1<<20 || large != 64<<20 {
		t.Fatalf("heap sizes %d and %d", small, large)
	}
	region0 := ts[0].Heap().Region()

	// Puts past rank 0's heap pass rank 1's local check and are refused by
	// rank 0: Put returns nil, the next Quiet reports it.
	data := pattern(1, 0, 0, 0, 4096)
	for _, off := range []uint64{2 << 20, small - 10, small} {
		if err := ts[1].Put(engine.SymmetricBuffer{Rank: 0, Offset: off, Len: 4096}, data); err != nil {
			t.Fatalf("put at %d: %v (the target refuses it, not the sender)", off, err)
		}
		requireRemoteRefusal(t, "quiet", ts[1].Quiet(), "put", 0)
		if err := ts[1].Quiet(); err != nil {
			t.Errorf("second Quiet reports the refusal again: %v", err)
		}
	}
	requireZero(t, "rank 0's heap after refused puts", region0)

	// A non-blocking refused put, reported by Barrier.
	r, err := ts[1].PutNB(engine.SymmetricBuffer{Rank: 0, Offset: 32 << 20, Len: 4096}, data)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Wait(); err != nil {
		t.Fatalf("putnb wait: %v", err)
	}
	var wg sync.WaitGroup
	var berr [2]error
	for i, tr := range ts {
		wg.Go(func() { berr[i] = tr.Barrier() })
	}
	wg.Wait()
	if berr[0] != nil {
		t.Errorf("rank 0 barrier: %v", berr[0])
	}
	requireRemoteRefusal(t, "barrier", berr[1], "put", 0)
	requireZero(t, "rank 0's heap after a refused putnb", region0)

	// Gets past rank 0's heap fail with the target's refusal.
	dst := make([]byte, 4096)
	requireRemoteRefusal(t, "get", ts[1].Get(engine.SymmetricBuffer{Rank: 0, Offset: small - 100, Len: 4096}, dst), "get", 0)
	g, err := ts[1].GetNB(engine.SymmetricBuffer{Rank: 0, Offset: 48 << 20, Len: 4096}, dst)
	if err != nil {
		t.Fatal(err)
	}
	requireRemoteRefusal(t, "getnb", g.Wait(), "get", 0)

	// The connection still works both ways, one-sided and two-sided.
	if err := ts[1].Put(engine.SymmetricBuffer{Rank: 0, Offset: small - 4096, Len: 4096}, data); err != nil {
		t.Fatal(err)
	}
	if err := ts[1].Quiet(); err != nil {
		t.Fatalf("quiet after a good put: %v", err)
	}
	if !bytes.Equal(region0[small-4096:], data) {
		t.Fatal("good put after refusals not in rank 0's heap")
	}
	requireZero(t, "rank 0's heap below the good put", region0[:small-4096])
	clear(dst)
	if err := ts[1].Get(engine.SymmetricBuffer{Rank: 0, Offset: small - 4096, Len: 4096}, dst); err != nil || !bytes.Equal(dst, data) {
		t.Fatalf("good get after refusals: %v", err)
	}
	msg := pattern(0, 1, 9, 0, 100<<10)
	go func() { ts[0].Send(1, 9, msg) }()
	if got, err := ts[1].Recv(0, 9); err != nil || !bytes.Equal(got, msg) {
		t.Fatalf("recv after refusals: %v", err)
	}
	if err := ts[1].Send(0, 9, msg); err != nil {
		t.Fatal(err)
	}
	if got, err := ts[0].Recv(1, 9); err != nil || !bytes.Equal(got, msg) {
		t.Fatalf("recv after refusals: %v", err)
	}
	barrierAll(t, ts)
}

// rawJoined is a raw client joined to a mesh as a rank: its data stream
// (SEND, RTS, DATA) and its control stream (everything else), as
// frame/spec.md's full mesh has for Streams 1.
type rawJoined struct{ data, ctl net.Conn }

// rawJoin joins the mesh at addr as rank rank of world with raw sockets,
// following the handshake of frame/spec.md as badpeer_test.go's raw dialer
// does, once for the data stream and once for the control stream, and
// returns the connections ready for frames, the rank's window granted.
func rawJoin(t *testing.T, addr string, rank, world int, key []byte) rawJoined {
	t.Helper()
	rp := rawJoined{data: rawJoinStream(t, addr, rank, world, 0, key), ctl: rawJoinStream(t, addr, rank, world, 1, key)}
	// The first frame on the control stream grants the peer its window.
	if h, _, err := readFrame(rp.ctl); err != nil || h.Kind != frame.KindCredit || h.Offset == 0 {
		t.Fatalf("want the first CREDIT, got %+v: %v", h, err)
	}
	writeRaw(t, rp.ctl, frame.Header{Kind: frame.KindCredit, Src: uint32(rank), Offset: 1 << 20}, nil)
	return rp
}

// rawJoinStream connects and shakes hands as stream s of rank.
func rawJoinStream(t *testing.T, addr string, rank, world, s int, key []byte) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(5 * time.Second))
	helloD := helloPayload(t, frame.Hello{Version: frame.Version, World: uint32(world), Rank: uint32(rank), Stream: uint16(s), Streams: 1, MeshID: testMeshID("boltmesh")})
	if _, err := c.Write(encodeFrame(frame.KindHello, 0, helloD)); err != nil {
		t.Fatal(err)
	}
	h, helloA, err := readFrame(c)
	if err != nil || h.Kind != frame.KindHello || h.Flags != frame.FlagReply {
		t.Fatalf("want HELLO|Reply, got %v flags %#x: %v", h.Kind, h.Flags, err)
	}
	if _, err := c.Write(encodeFrame(frame.KindAuth, 0, handshakeMAC(key, "boltmesh dialer", helloD, helloA))); err != nil {
		t.Fatal(err)
	}
	h, macA, err := readFrame(c)
	if err != nil || h.Kind != frame.KindAuth || h.Flags != frame.FlagReply || !hmac.Equal(macA, handshakeMAC(key, "boltmesh acceptor", helloD, helloA)) {
		t.Fatalf("want the acceptor's AUTH|Reply with its proof, got %v flags %#x: %v", h.Kind, h.Flags, err)
	}
	return c
}

// writeRaw writes a frame with header h (Length set from payload).
func writeRaw(t *testing.T, c net.Conn, h frame.Header, payload []byte) {
	t.Helper()
	h.Length = uint64(len(payload))
	var hdr [frame.HeaderSize]byte
	h.Encode(&hdr)
	if _, err := c.Write(append(hdr[:], payload...)); err != nil {
		t.Fatal(err)
	}
}

// rawGetReq is a GET_REQ payload.
func rawGetReq(id, n uint64) []byte {
	var p [frame.GetReqSize]byte
	(&frame.GetReq{ID: id, Length: n}).Encode(&p)
	return p[:]
}

func TestHeapForgedFrames(t *testing.T) {
	key := []byte("heap-forged")
	lns, addrs := listeners(t, 2)
	lns[1].Close() // rank 1 is the raw client; it listens nowhere
	wait0 := startRank(t, 0, 2, lns[0], addrs, engine.Options{HeapSize: 1 << 20, MeshKey: key, Logger: discardLogger})
	rp := rawJoin(t, addrs[0], 1, 2, key)
	c := rp.ctl
	tr, err := wait0()
	if err != nil {
		t.Fatal(err)
	}
	watchdog(t, 10*time.Second, tr)
	size := tr.Heap().Size()
	region := tr.Heap().Region()

	// A PUT that ends past the heap: answered with PUT_ACK|Error, code 1.
	junk := bytes.Repeat([]byte{0xAB}, 100)
	writeRaw(t, c, frame.Header{Kind: frame.KindPut, Src: 1, Offset: size - 10}, junk)
	h, reason, err := readFrame(c)
	if err != nil {
		t.Fatal(err)
	}
	if h.Kind != frame.KindPutAck || h.Flags&frame.FlagError == 0 || h.Aux != 1 || h.Offset != size-10 || h.Src != 0 || len(reason) == 0 {
		t.Fatalf("got %+v %q, want PUT_ACK|Error from rank 0 with code 1 at offset %d and a reason", h, reason, size-10)
	}
	requireZero(t, "heap after a forged out-of-bounds PUT", region)

	// A GET_REQ past the heap: GET_REPLY|Error echoing the id, code 1.
	writeRaw(t, c, frame.Header{Kind: frame.KindGetReq, Src: 1, Offset: size - 10}, rawGetReq(42, 100))
	h, reason, err = readFrame(c)
	if err != nil {
		t.Fatal(err)
	}
	if h.Kind != frame.KindGetReply || h.Flags&frame.FlagError == 0 || h.Aux != 1 || h.Offset != 42 || len(reason) == 0 {
		t.Fatalf("got %+v %q, want GET_REPLY|Error for id 42 with code 1", h, reason)
	}

	// The stream is intact: a good PUT lands, a fence and a GET see it.
	writeRaw(t, c, frame.Header{Kind: frame.KindPut, Src: 1, Offset: size - 100}, junk)
	writeRaw(t, c, frame.Header{Kind: frame.KindGetReq, Src: 1, Offset: 0}, rawGetReq(43, 0))
	if h, p, err := readFrame(c); err != nil || h.Kind != frame.KindGetReply || h.Flags != 0 || h.Offset != 43 || len(p) != 0 {
		t.Fatalf("fence: got %+v %q: %v", h, p, err)
	}
	if !bytes.Equal(region[size-100:], junk) {
		t.Fatal("good forged PUT not in the heap")
	}
	requireZero(t, "heap below the good PUT", region[:size-100])
	writeRaw(t, c, frame.Header{Kind: frame.KindGetReq, Src: 1, Offset: size - 100}, rawGetReq(44, 100))
	if h, p, err := readFrame(c); err != nil || h.Kind != frame.KindGetReply || h.Offset != 44 || !bytes.Equal(p, junk) {
		t.Fatalf("get: got %+v: %v", h, err)
	}

	// Two-sided messages still flow both ways.
	writeRaw(t, rp.data, frame.Header{Kind: frame.KindSend, Src: 1, Tag: 5}, []byte("hello"))
	if got, err := tr.Recv(1, 5); err != nil || string(got) != "hello" {
		t.Fatalf("recv: %q %v", got, err)
	}
	if err := tr.Send(1, 6, []byte("world")); err != nil {
		t.Fatal(err)
	}
	if h, p, err := readFrame(rp.data); err != nil || h.Kind != frame.KindSend || h.Tag != 6 || string(p) != "world" {
		t.Fatalf("raw client got %+v %q: %v", h, p, err)
	}
}
