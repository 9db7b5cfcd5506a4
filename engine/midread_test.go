package engine_test

import (
	"bytes"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/frame"
)

// A request whose payload is being read into its buffer when the
// transport closes (or its peer is lost) returns only once nothing writes
// into that buffer any more: the caller may reuse it at once. The raw rank
// sends rank 0 the first part of a payload (an eager SEND's, a rendezvous
// message's DATA, a GET reply), rank 0 closes, and, as its operations with
// the raw rank are failed (SetFailHook), the raw rank sends the rest,
// which rank 0's event loop, still running, reads: that must not change
// the buffer after the call returned.

// result is how a call ended: its error, and its buffer as it returned.
type result struct {
	err  error
	snap []byte
}

const (
	midLen  = 64 << 10
	midPart = 16 << 10
	midTag  = 5
)

func TestFailedReadReturnsLast(t *testing.T) {
	for _, kind := range []string{"send", "rendezvous", "get"} {
		t.Run(kind, func(t *testing.T) { runMidRead(t, kind) })
	}
}

func runMidRead(t *testing.T, kind string) {
	opts := peerOpts()
	opts.MaxQueuedBytes = 1 << 20
	w := rawWorld(t, false, opts)
	tr, rp := w.ts[0], w.raw

	buf := make([]byte, midLen)
	res := make(chan result, 1)
	call := func(op func() error) {
		go func() {
			err := op()
			res <- result{err, bytes.Clone(buf)}
		}()
	}
	var h frame.Header // the frame whose payload the raw rank sends in parts
	switch kind {
	case "send":
		call(func() error { _, err := tr.RecvInto(rawRank, midTag, buf); return err })
		waitUntil(t, func() bool { return engine.PostedRecvs(tr, rawRank) == 1 }, "the receive posted")
		h = frame.Header{Kind: frame.KindSend, Tag: midTag}
	case "rendezvous":
		call(func() error { _, err := tr.RecvInto(rawRank, midTag, buf); return err })
		waitUntil(t, func() bool { return engine.PostedRecvs(tr, rawRank) == 1 }, "the receive posted")
		var p [frame.RTSSize]byte
		frame.EncodeRTS(&p, midLen)
		const id = 1 << 40
		if err := rp.send(0, 0, frame.Header{Kind: frame.KindRTS, Tag: midTag, Offset: id}, p[:]); err != nil {
			t.Fatal(err)
		}
		if !rp.waitFor(10*time.Second, func() bool { return hasFrame(rp, frame.KindCTS, id) }) {
			t.Fatalf("no CTS for the rendezvous message (raw rank: %v)", rp.deadErr())
		}
		h = frame.Header{Kind: frame.KindData, Tag: midTag, Offset: id, Aux: 1 << 16}
	case "get":
		call(func() error { return tr.Get(engine.SymmetricBuffer{Rank: rawRank, Len: midLen}, buf) })
		var id uint64
		if !rp.waitFor(10*time.Second, func() bool {
			for _, f := range rp.got {
				if f.h.Kind == frame.KindGetReq {
					req, _ := frame.DecodeGetReq(f.p)
					id = req.ID
					return true
				}
			}
			return false
		}) {
			t.Fatalf("no GET_REQ (raw rank: %v)", rp.deadErr())
		}
		h = frame.Header{Kind: frame.KindGetReply, Offset: id}
	}
	h.Length = midLen
	s := ctlStreamIndex
	if h.Kind != frame.KindGetReply {
		s = 0
	}
	if err := rp.conn(0, s, h).writePart(rp.rank, h, bytes.Repeat([]byte{0xaa}, midPart)); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, func() bool { return engine.ReadInFlight(tr, rawRank) }, "the payload being read")

	// As rank 0 fails its operations with the raw rank, the rest comes.
	rest := make(chan error, 1)
	var once sync.Once
	engine.SetFailHook(func(ft *engine.NetTransport, rank int) {
		if ft == tr && rank == rawRank {
			once.Do(func() { rest <- sendRest(tr, rp, s, h, res) })
		}
	})
	t.Cleanup(func() { engine.SetFailHook(nil) })
	tr.Close()
	if err := <-rest; err != nil {
		t.Fatalf("sending the rest: %v", err)
	}
	r := <-res
	if !bytes.Equal(r.snap, buf) {
		t.Fatalf("the buffer changed after the %s returned (%v): %d of its bytes differ", kind, r.err, diffCount(r.snap, buf))
	}
	want := append(bytes.Repeat([]byte{0xaa}, midPart), bytes.Repeat([]byte{0xbb}, midLen-midPart)...)
	switch {
	case r.err == nil && !bytes.Equal(buf, want):
		t.Fatalf("the %s succeeded with %d bytes other than those sent", kind, diffCount(buf, want))
	case r.err != nil && !errors.Is(r.err, engine.ErrClosed):
		t.Fatalf("the %s failed with %v, want nil or ErrClosed", kind, r.err)
	}
}

// sendRest has the raw rank send the rest of h's payload on stream s,
// once the call waiting for it (res) returned or has had 200 ms to, and
// waits until rank 0 (tr) read it.
func sendRest(tr *engine.NetTransport, rp *rawPeer, s int, h frame.Header, res chan result) error {
	select { // a call that fails now would have returned
	case r := <-res:
		res <- r
	case <-time.After(200 * time.Millisecond):
	}
	read := engine.BytesRead(tr, rawRank)
	err := rp.conn(0, s, h).writeRaw(bytes.Repeat([]byte{0xbb}, midLen-midPart))
	for end := time.Now().Add(5 * time.Second); err == nil && engine.BytesRead(tr, rawRank) < read+midLen-midPart && time.Now().Before(end); {
		time.Sleep(time.Millisecond)
	}
	return err
}

func hasFrame(rp *rawPeer, k frame.Kind, off uint64) bool {
	for _, f := range rp.got {
		if f.h.Kind == k && f.h.Offset == off {
			return true
		}
	}
	return false
}

func diffCount(a, b []byte) int {
	n := 0
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			n++
		}
	}
	return n + max(len(a), len(b)) - min(len(a), len(b))
}

// writePart writes h, from rank src with its Length as given, and the
// first part of its payload.
func (s *rawStream) writePart(src int, h frame.Header, part []byte) error {
	h.Src = uint32(src)
	var hb [frame.HeaderSize]byte
	h.Encode(&hb)
	return s.writeRaw(append(hb[:], part...))
}

// writeRaw writes b as it is.
func (s *rawStream) writeRaw(b []byte) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.nc.SetWriteDeadline(time.Now().Add(rawWriteWait))
	_, err := s.nc.Write(b)
	return err
}
