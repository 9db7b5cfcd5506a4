package engine_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/frame"
)

// TestOneSidedNotBehindUnreceived: one-sided operations and barriers
// never wait for the target's application, whatever that rank has not
// received from the same peer. Rank 0 sends rank 1 a message nobody
// receives yet, then gets from and puts to rank 1, and all three ranks
// meet at a barrier; only then does rank 1 receive. (Before flow control,
// a message of 32 KiB or more stayed in the socket until a receive was
// posted, and everything behind it waited: the get, the barrier's fence.)
func TestOneSidedNotBehindUnreceived(t *testing.T) {
	for _, size := range []int{16 << 10, 64 << 10, 1 << 20, 8 << 20} {
		t.Run(fmt.Sprintf("size=%d", size), func(t *testing.T) {
			ts := watchedMesh(t, 3, engine.Options{})
			bufs := make([]engine.SymmetricBuffer, 3)
			errc := make(chan error, 3)
			for r, tr := range ts {
				go func() {
					var err error
					bufs[r], err = tr.Alloc(4096, 0)
					errc <- err
				}()
			}
			for range ts {
				if err := <-errc; err != nil {
					t.Fatal(err)
				}
			}
			msg := pattern(0, 1, 7, 0, size)
			sent, err := ts[0].SendNB(1, 7, msg) // eager or rendezvous: never received until the end
			if err != nil {
				t.Fatal(err)
			}
			remote := bufs[0]
			remote.Rank = 1
			put := make([]byte, 4096)
			copy(put, "put behind a message")
			if err := ts[0].Put(remote, put); err != nil {
				t.Fatal(err)
			}
			got := make([]byte, 4096)
			if err := ts[0].Get(remote, got); err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(got, []byte("put behind a message")) {
				t.Fatalf("get read %q", got[:20])
			}
			barrierAll(t, ts)
			in, err := ts[1].Recv(0, 7)
			if err == nil {
				err = check(in, 0, 1, 7, 0, size)
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := sent.Wait(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestRendezvousMatching: rendezvous messages (above EagerMax) keep
// per-(source, tag) order with eager ones, go straight into a receive
// posted before them, fail a receive too small for them with a
// *TruncatedError and stay queued for the next one.
func TestRendezvousMatching(t *testing.T) {
	ts := watchedMesh(t, 2, engine.Options{EagerMax: 4 << 10})
	sizes := []int{8, 100 << 10, 10, 1 << 20, 0, 64 << 10}
	sent := make(chan error, 1)
	go func() {
		for i, n := range sizes {
			if err := ts[0].Send(1, 3, pattern(0, 1, 3, i, n)); err != nil {
				sent <- err
				return
			}
		}
		sent <- nil
	}()
	small := make([]byte, 16)
	for i, n := range sizes {
		if n > len(small) {
			_, err := ts[1].RecvInto(0, 3, small)
			var te *engine.TruncatedError
			if !errors.As(err, &te) || te.Len != n || !errors.Is(err, engine.ErrTruncated) {
				t.Fatalf("message %d (%d bytes) into 16: %v, want a *TruncatedError", i, n, err)
			}
		}
		buf := make([]byte, 2<<20)
		k, err := ts[1].RecvInto(0, 3, buf)
		if err == nil {
			err = check(buf[:k], 0, 1, 3, i, n)
		}
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
	}
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	// A receive posted first takes a rendezvous message straight in.
	got := make(chan error, 1)
	buf := make([]byte, 300<<10)
	go func() {
		n, err := ts[1].RecvInto(0, 4, buf)
		if err == nil {
			err = check(buf[:n], 0, 1, 4, 0, 300<<10)
		}
		got <- err
	}()
	time.Sleep(10 * time.Millisecond)
	if err := ts[0].Send(1, 4, pattern(0, 1, 4, 0, 300<<10)); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
}

// TestRendezvousWithdraw: a SendContext of a rendezvous message that
// nobody takes is withdrawn when its ctx ends (the caller's buffer is free
// at once and the receiver never sees it); a message the receiver took is
// not, and arrives whole.
func TestRendezvousWithdraw(t *testing.T) {
	ts := watchedMesh(t, 2, engine.Options{EagerMax: 4 << 10})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := ts[0].SendContext(ctx, 1, 5, pattern(0, 1, 5, 0, 1<<20)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("SendContext nobody receives: %v, want context.DeadlineExceeded", err)
	}
	sent := make(chan error, 1)
	go func() { sent <- ts[0].SendContext(context.Background(), 1, 5, pattern(0, 1, 5, 1, 1<<20)) }()
	got, err := ts[1].Recv(0, 5)
	if err == nil {
		err = check(got, 0, 1, 5, 1, 1<<20)
	}
	if err != nil {
		t.Fatalf("after a withdrawal: %v (the withdrawn message arrived?)", err)
	}
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	if b, err := ts[1].RecvTimeout(0, 5, 20*time.Millisecond); !errors.Is(err, engine.ErrTimeout) {
		t.Fatalf("a withdrawn message arrived: %d bytes, %v", len(b), err)
	}
}

// TestSendNBExchange: two ranks that send each other a rendezvous
// message and then receive do not wait for each other with SendNB.
func TestSendNBExchange(t *testing.T) {
	ts := watchedMesh(t, 2, engine.Options{})
	const n = 8 << 20
	errc := make(chan error, 2)
	for r := range ts {
		go func() {
			req, err := ts[r].SendNB(1-r, 9, pattern(r, 1-r, 9, 0, n))
			if err != nil {
				errc <- err
				return
			}
			got, err := ts[r].Recv(1-r, 9)
			if err == nil {
				err = check(got, 1-r, r, 9, 0, n)
			}
			if werr := req.Wait(); err == nil {
				err = werr
			}
			errc <- err
		}()
	}
	for range ts {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
}

// TestCreditOverrunDropsPeer: a peer that sends more than the credit it
// was granted is dropped, with ErrFlowControl as the cause, before the
// receiver holds it.
func TestCreditOverrunDropsPeer(t *testing.T) {
	lns, addrs := listeners(t, 2)
	lns[1].Close()
	const window = 1 << 20
	wait0 := startRank(t, 0, 2, lns[0], addrs, engine.Options{MaxQueuedBytes: window, Logger: discardLogger, MeshKey: []byte("k")})
	c := rawJoin(t, addrs[0], 1, 2, []byte("k")).data
	tr, err := wait0()
	if err != nil {
		t.Fatal(err)
	}
	watchdog(t, 10*time.Second, tr)
	msg := make([]byte, 64<<10) // Cost 64 KiB + 384: the window holds 15
	for range 16 {
		writeRaw(t, c, frame.Header{Kind: frame.KindSend, Src: 1, Tag: 1}, msg)
	}
	_, err = tr.Recv(1, 2)
	if !errors.Is(err, engine.ErrPeerLost) || !errors.Is(err, engine.ErrFlowControl) {
		t.Fatalf("after a credit overrun: %v, want ErrPeerLost with cause ErrFlowControl", err)
	}
}

// TestRefusedPayloadsNotHeld: a payload that will be refused is read and
// dropped without being held: a 256 MiB PUT outside the heap (answered
// with PUT_ACK|Error) and a 256 MiB GET_REPLY nobody asked for leave the
// receiver's heap as it was, and the connection works after them.
func TestRefusedPayloadsNotHeld(t *testing.T) {
	lns, addrs := listeners(t, 2)
	lns[1].Close()
	key := []byte("refused")
	wait0 := startRank(t, 0, 2, lns[0], addrs, engine.Options{HeapSize: 1 << 20, Logger: discardLogger, MeshKey: key})
	rp := rawJoin(t, addrs[0], 1, 2, key)
	c := rp.ctl
	tr, err := wait0()
	if err != nil {
		t.Fatal(err)
	}
	watchdog(t, 60*time.Second, tr)
	c.SetDeadline(time.Now().Add(60 * time.Second))
	const huge = 256 << 20
	chunk := make([]byte, 1<<20)
	writeHuge := func(h frame.Header) {
		h.Length = huge
		var hdr [frame.HeaderSize]byte
		h.Encode(&hdr)
		if _, err := c.Write(hdr[:]); err != nil {
			t.Fatal(err)
		}
		for range huge / len(chunk) {
			if _, err := c.Write(chunk); err != nil {
				t.Fatal(err)
			}
		}
	}
	before := heapInuse()
	writeHuge(frame.Header{Kind: frame.KindPut, Src: 1, Offset: 1 << 19})
	h, reason, err := readFrame(c)
	for err == nil && h.Kind == frame.KindHeartbeat { // 256 MiB may take a heartbeat's interval on a loaded machine
		h, reason, err = readFrame(c)
	}
	if err != nil || h.Kind != frame.KindPutAck || h.Flags&frame.FlagError == 0 || h.Aux != 1 || len(reason) == 0 {
		t.Fatalf("got %+v %q (%v), want PUT_ACK|Error code 1", h, reason, err)
	}
	writeHuge(frame.Header{Kind: frame.KindGetReply, Src: 1, Offset: 12345})
	// The stream is intact after both: a message arrives.
	writeRaw(t, rp.data, frame.Header{Kind: frame.KindSend, Src: 1, Tag: 5}, []byte("after"))
	if got, err := tr.Recv(1, 5); err != nil || string(got) != "after" {
		t.Fatalf("recv after the refused payloads: %q %v", got, err)
	}
	if growth := heapInuse() - before; growth > 16<<20 {
		t.Fatalf("the heap grew by %d MiB reading two refused 256 MiB payloads", growth>>20)
	}
}
