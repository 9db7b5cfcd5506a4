package ioloop_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/frame"
	"github.com/boltmesh/boltmesh/internal/looptest"
	"github.com/boltmesh/boltmesh/ioloop"
	"golang.org/x/sys/unix"
)

// selfDescribing returns the payload of frame seq of sender src: its
// identity, its length, then pattern bytes, so that a frame mixed with
// another cannot pass verifyself.
func selfDescribing(src, seq uint32) []byte {
	n := 12 + int(src*131+seq*977)%3000
	if seq%50 == 7 {
		n += 70 << 10 // above DirectRead and the staging buffer
	}
	p := make([]byte, n)
	binary.LittleEndian.PutUint32(p[0:], src)
	binary.LittleEndian.PutUint32(p[4:], seq)
	binary.LittleEndian.PutUint32(p[8:], uint32(n))
	copy(p[12:], looptest.Patterned(uint64(src)<<32|uint64(seq), n-12))
	return p
}

// verifySelf checks a frame built by selfDescribing against its header.
func verifySelf(f looptest.Frame) error {
	p := f.Payload
	if len(p) < 12 {
		return fmt.Errorf("frame %+v: payload of %d bytes", f.Hdr, len(p))
	}
	src, seq, n := binary.LittleEndian.Uint32(p[0:]), binary.LittleEndian.Uint32(p[4:]), binary.LittleEndian.Uint32(p[8:])
	if src != f.Hdr.Src || seq != f.Hdr.Aux || int(n) != len(p) {
		return fmt.Errorf("frame %+v carries src %d seq %d len %d (payload %d bytes)", f.Hdr, src, seq, n, len(p))
	}
	want := selfDescribing(src, seq)
	if i := looptest.FirstDiff(p, want); i != len(want) || len(p) != len(want) {
		return fmt.Errorf("frame src %d seq %d: payload differs at byte %d", src, seq, i)
	}
	return nil
}

// TestConcurrentSenders: many goroutines Send on one Conn; every frame
// arrives whole, never interleaved with another, and each sender's frames
// arrive in its order.
func TestConcurrentSenders(t *testing.T) {
	for _, family := range families {
		t.Run(familyName(family), func(t *testing.T) {
			looptest.LeakCheck(t)
			l := looptest.NewLoop(t, ioloop.Options{})
			rx := looptest.NewHandler()
			rx.Named = func(h *frame.Header) bool { return h.Aux%3 == 0 }
			ca, _ := connPair(t, l, family, looptest.NewHandler(), rx)
			const senders, perSender = 16, 150
			var wg sync.WaitGroup
			errc := make(chan error, senders)
			for g := range senders {
				wg.Go(func() {
					for seq := range perSender {
						h := frame.Header{Kind: frame.KindSend, Src: uint32(g), Aux: uint32(seq)}
						if err := ca.Send(&h, selfDescribing(uint32(g), uint32(seq))); err != nil {
							errc <- err
							return
						}
					}
				})
			}
			wg.Wait()
			close(errc)
			for err := range errc {
				t.Fatal(err)
			}
			got := rx.WaitFrames(t, senders*perSender)
			next := make([]uint32, senders)
			for _, f := range got {
				if err := verifySelf(f); err != nil {
					t.Fatal(err)
				}
				if f.Named != (f.Hdr.Aux%3 == 0) {
					t.Errorf("frame %+v: named = %v", f.Hdr, f.Named)
				}
				if f.Hdr.Aux != next[f.Hdr.Src] {
					t.Fatalf("sender %d: got seq %d, want %d", f.Hdr.Src, f.Hdr.Aux, next[f.Hdr.Src])
				}
				next[f.Hdr.Src]++
			}
			if len(got) != senders*perSender {
				t.Errorf("got %d frames, want %d", len(got), senders*perSender)
			}
			rx.Check(t)
		})
	}
}

// blockSender starts sending a frame of size bytes on c, whose peer does
// not read, and waits until a writev of c met a full socket. The returned
// channel yields the Send's result.
func blockSender(t *testing.T, c *ioloop.Conn, wl *writevLog, h frame.Header, size int) <-chan error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- c.Send(&h, looptest.Patterned(99, size)) }()
	looptest.WaitFor(t, "a writev to meet a full socket", func() bool {
		for _, w := range wl.of(c.ID()) {
			if w.n == 0 {
				return true
			}
		}
		return false
	})
	select {
	case err := <-done:
		t.Fatalf("Send of %d bytes to a peer that does not read returned %v", size, err)
	default:
	}
	return done
}

// TestCoalescing: frames queued behind a blocked frame go out together, in
// one writev that carries several of them whole.
func TestCoalescing(t *testing.T) {
	looptest.LeakCheck(t)
	wl := installWritevLog(t)
	l := looptest.NewLoop(t, ioloop.Options{})
	c, raw := rawPeer(t, l, unix.AF_UNIX, 1, looptest.NewHandler())

	const bigSize = 4 << 20
	big := frame.Header{Kind: frame.KindSend, Aux: 1000}
	bigDone := blockSender(t, c, wl, big, bigSize)

	// Queue small frames behind it.
	const small, smallSize = 8, 100
	var wg sync.WaitGroup
	errc := make(chan error, small)
	for i := range small {
		wg.Go(func() {
			h := frame.Header{Kind: frame.KindSend, Aux: uint32(i)}
			errc <- c.Send(&h, looptest.Patterned(uint64(i), smallSize))
		})
	}
	looptest.WaitFor(t, "the small frames to queue", func() bool { return ioloop.QueuedFrames(c) == small+1 })

	// Bytes written before the drain starts, and where frames end in the
	// stream: the big frame first, then small frames of one size each.
	written := 0
	before := wl.of(c.ID())
	for _, w := range before {
		written += w.n
	}
	bigEnd := frame.HeaderSize + bigSize
	smallEnd := func(k int) int { return bigEnd + k*(frame.HeaderSize+smallSize) }

	// Drain the peer slowly enough that the loop takes over the writing.
	type rx struct {
		h frame.Header
		p []byte
	}
	frames := make(chan rx, small+1)
	readErr := make(chan error, 1)
	go func() {
		for range small + 1 {
			h, p, err := raw.readFrame(64 << 10)
			if err != nil {
				readErr <- err
				return
			}
			frames <- rx{h, p}
		}
		readErr <- nil
	}()
	if err := <-readErr; err != nil {
		t.Fatal(err)
	}
	if err := <-bigDone; err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		if err != nil {
			t.Fatal(err)
		}
	}
	close(frames)
	seen := map[uint32]bool{}
	first := true
	for f := range frames {
		if first {
			if f.h.Aux != 1000 || len(f.p) != bigSize || looptest.FirstDiff(f.p, looptest.Patterned(99, bigSize)) != bigSize {
				t.Fatalf("first frame: %+v with %d bytes, want the big frame intact", f.h, len(f.p))
			}
			first = false
			continue
		}
		if f.h.Aux >= small || seen[f.h.Aux] || looptest.FirstDiff(f.p, looptest.Patterned(uint64(f.h.Aux), smallSize)) != smallSize {
			t.Fatalf("bad small frame %+v", f.h)
		}
		seen[f.h.Aux] = true
	}

	// Some writev after the drain started carried at least two whole small
	// frames.
	pos, best := written, 0
	all := wl.of(c.ID())
	for _, w := range all[len(before):] {
		start, end := pos, pos+w.n
		pos = end
		whole := 0
		for k := 1; k <= small; k++ {
			if start <= smallEnd(k-1) && smallEnd(k) <= end {
				whole++
			}
		}
		if w.n > 0 && w.bufs <= 2 && whole > 0 {
			t.Errorf("writev of %d bufs carried %d whole small frames", w.bufs, whole)
		}
		best = max(best, whole)
	}
	if pos != smallEnd(small) {
		t.Errorf("writevs wrote %d bytes, want %d", pos, smallEnd(small))
	}
	if best < 2 {
		t.Errorf("no writev carried more than one queued frame: %v", wl)
	}
	var maxBufs int
	for _, w := range all {
		maxBufs = max(maxBufs, w.bufs)
	}
	if maxBufs <= 2 {
		t.Errorf("no writev had more than 2 buffers")
	}
}

// TestPartialWrites: a 32 MiB frame to a peer that reads slowly, in small
// odd-sized reads, is written in many pieces and arrives intact, and the
// frame after it too.
func TestPartialWrites(t *testing.T) {
	looptest.LeakCheck(t)
	wl := installWritevLog(t)
	l := looptest.NewLoop(t, ioloop.Options{})
	c, raw := rawPeer(t, l, unix.AF_INET, 5, looptest.NewHandler())
	const size = 32 << 20
	payload := looptest.Filled(size)
	payload[size-1] ^= 0x5a
	errc := make(chan error, 2)
	go func() {
		h := frame.Header{Kind: frame.KindPut, Offset: 1 << 33}
		errc <- c.Send(&h, payload)
	}()
	go func() {
		h := frame.Header{Kind: frame.KindHeartbeat}
		time.Sleep(time.Millisecond)
		errc <- c.Send(&h, nil)
	}()

	var hb [frame.HeaderSize]byte
	if err := raw.readFull(hb[:], 7); err != nil {
		t.Fatal(err)
	}
	h, err := frame.Decode(hb[:], 0)
	if err != nil {
		t.Fatal(err)
	}
	if h.Kind == frame.KindHeartbeat { // it won the race to the queue
		if err := raw.readFull(hb[:], 7); err != nil {
			t.Fatal(err)
		}
		if h, err = frame.Decode(hb[:], 0); err != nil {
			t.Fatal(err)
		}
	}
	if h != (frame.Header{Kind: frame.KindPut, Offset: 1 << 33, Length: size}) {
		t.Fatalf("header %+v", h)
	}
	got := make([]byte, size)
	const chunk = 65521 // odd, so that reads end mid-iovec
	for off := 0; off < size; {
		n := min(chunk, size-off)
		if err := raw.readFull(got[off:off+n], n); err != nil {
			t.Fatal(err)
		}
		off += n
		if off%(1<<20) < chunk {
			time.Sleep(2 * time.Millisecond) // a slow reader
		}
	}
	if i := looptest.FirstDiff(got, payload); i != size {
		t.Fatalf("payload differs at byte %d", i)
	}
	for range 2 {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
	// The heartbeat, unless it came first.
	unix.SetNonblock(raw.fd, true)
	if n, _ := unix.Read(raw.fd, hb[:]); n == frame.HeaderSize {
		if h, err := frame.Decode(hb[:], 0); err != nil || h.Kind != frame.KindHeartbeat {
			t.Errorf("trailing frame %+v, %v", h, err)
		}
	}
	partial := 0
	for _, w := range wl.of(5) {
		if w.n > 0 && w.n < size {
			partial++
		}
	}
	if partial < 2 {
		t.Errorf("the 32 MiB frame took %d partial writevs: %v", partial, wl)
	}
}

// TestSendCancel: SendCancel with a closed cancel channel on a connection
// whose socket is full gives up with ErrCanceled, and the stream stays
// intact: the frames before and after it decode fine and it is not sent.
func TestSendCancel(t *testing.T) {
	looptest.LeakCheck(t)
	wl := installWritevLog(t)
	l := looptest.NewLoop(t, ioloop.Options{})
	c, raw := rawPeer(t, l, unix.AF_UNIX, 3, looptest.NewHandler())
	const bigSize = 2 << 20
	bigDone := blockSender(t, c, wl, frame.Header{Kind: frame.KindSend, Aux: 1}, bigSize)

	canceled := make(chan struct{})
	close(canceled)
	h := frame.Header{Kind: frame.KindSend, Aux: 2}
	if err := c.SendCancel(&h, looptest.Patterned(2, 5000), canceled); !errors.Is(err, ioloop.ErrCanceled) {
		t.Fatalf("SendCancel with a closed channel on a blocked conn = %v, want ErrCanceled", err)
	}

	// One that is canceled while it waits.
	cancel := make(chan struct{})
	res := make(chan error, 1)
	go func() {
		h := frame.Header{Kind: frame.KindSend, Aux: 3}
		res <- c.SendCancel(&h, looptest.Patterned(3, 10), cancel)
	}()
	looptest.WaitFor(t, "the frame to queue", func() bool { return ioloop.QueuedFrames(c) == 2 })
	close(cancel)
	if err := <-res; !errors.Is(err, ioloop.ErrCanceled) {
		t.Fatalf("SendCancel canceled while queued = %v, want ErrCanceled", err)
	}
	if n := ioloop.QueuedFrames(c); n != 1 {
		t.Errorf("%d frames queued after the cancels, want 1", n)
	}

	// A frame after the canceled ones, then drain.
	after := make(chan error, 1)
	go func() {
		h := frame.Header{Kind: frame.KindSend, Aux: 4}
		after <- c.Send(&h, looptest.Patterned(4, 300))
	}()
	looptest.WaitFor(t, "the frame to queue", func() bool { return ioloop.QueuedFrames(c) == 2 })
	expectFrames(t, raw, []wantFrame{{1, 99, bigSize}, {4, 4, 300}})
	if err := <-bigDone; err != nil {
		t.Fatal(err)
	}
	if err := <-after; err != nil {
		t.Fatal(err)
	}
	// Nothing else is on the wire.
	unix.SetNonblock(raw.fd, true)
	var b [1]byte
	if n, err := unix.Read(raw.fd, b[:]); err != unix.EAGAIN {
		t.Errorf("extra bytes on the wire: read = %d, %v", n, err)
	}
	// And the connection still works.
	h = frame.Header{Kind: frame.KindSend, Aux: 5}
	if err := c.Send(&h, looptest.Patterned(5, 40)); err != nil {
		t.Fatal(err)
	}
	unix.SetNonblock(raw.fd, false)
	if h, p, err := raw.readFrame(1 << 16); err != nil || h.Aux != 5 || looptest.FirstDiff(p, looptest.Patterned(5, 40)) != 40 {
		t.Fatalf("frame after the cancels: %+v, %v", h, err)
	}
}

// TestWaitDetach: a frame queued behind a blocked one and detached while
// it waits (unlike WaitCancel, which would drop it) is still sent whole,
// from its own copy, after the caller has reused its buffer.
func TestWaitDetach(t *testing.T) {
	looptest.LeakCheck(t)
	wl := installWritevLog(t)
	l := looptest.NewLoop(t, ioloop.Options{})
	c, raw := rawPeer(t, l, unix.AF_UNIX, 3, looptest.NewHandler())
	const bigSize = 2 << 20
	bigDone := blockSender(t, c, wl, frame.Header{Kind: frame.KindSend, Aux: 1}, bigSize)

	payload := bytes.Clone(looptest.Patterned(2, 70000)) // patterned shares its bytes
	h := frame.Header{Kind: frame.KindSend, Aux: 2}
	w, err := c.Start(&h, payload)
	if err != nil {
		t.Fatal(err)
	}
	looptest.WaitFor(t, "the frame to queue", func() bool { return ioloop.QueuedFrames(c) == 2 })
	cancel := make(chan struct{})
	close(cancel)
	if err := w.WaitDetach(cancel); err != nil {
		t.Fatalf("WaitDetach of a queued frame = %v, want nil", err)
	}
	clear(payload)
	expectFrames(t, raw, []wantFrame{{1, 99, bigSize}, {2, 2, 70000}})
	if err := <-bigDone; err != nil {
		t.Fatal(err)
	}
	// A frame that completes before the cancel reports its own result.
	h = frame.Header{Kind: frame.KindSend, Aux: 3}
	w, err = c.Start(&h, looptest.Patterned(3, 40))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WaitDetach(make(chan struct{})); err != nil {
		t.Fatal(err)
	}
	if h, p, err := raw.readFrame(1 << 16); err != nil || h.Aux != 3 || looptest.FirstDiff(p, looptest.Patterned(3, 40)) != 40 {
		t.Fatalf("frame after the detach: %+v, %v", h, err)
	}
}

// wantFrame is a frame expected on the wire: its Aux, and its payload,
// looptest.Patterned(seed, size).
type wantFrame struct {
	aux        uint32
	seed, size int
}

// expectFrames reads frames from raw and checks them against want, in order.
func expectFrames(t *testing.T, raw *rawFd, want []wantFrame) {
	t.Helper()
	for _, w := range want {
		h, p, err := raw.readFrame(1 << 16)
		if err != nil {
			t.Fatalf("reading frame %d: %v", w.aux, err)
		}
		if h.Aux != w.aux || len(p) != w.size || looptest.FirstDiff(p, looptest.Patterned(uint64(w.seed), w.size)) != w.size {
			t.Fatalf("got frame %+v with %d bytes, want aux %d with %d intact bytes", h, len(p), w.aux, w.size)
		}
	}
}
