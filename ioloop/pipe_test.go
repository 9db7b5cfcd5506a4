package ioloop_test

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/boltmesh/boltmesh/frame"
	"github.com/boltmesh/boltmesh/ioloop"
	"golang.org/x/sys/unix"
)

// rawPipe maps a pipe with rings of ring bytes, registers side 0 on l
// with handler h, and returns side 1 as a RawPipe with its bell, for the
// test to play the other process.
func rawPipe(t *testing.T, l *ioloop.Loop, ring int, h ioloop.Handler) (*ioloop.Conn, *ioloop.RawPipe, int, []byte) {
	t.Helper()
	page := unix.Getpagesize()
	size := (ioloop.PipeSize(ring) + page - 1) / page * page
	mem, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_ANON)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Munmap(mem) })
	if err := ioloop.InitPipe(mem, ring); err != nil {
		t.Fatal(err)
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := ioloop.NewRawPipe(mem, 1, fds[1])
	if err != nil {
		t.Fatal(err)
	}
	c, err := l.RegisterPipe(fds[0], mem, 0, nil, 3, h, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c, raw, fds[1], mem
}

// TestPipeDeathMidFrame: the other process publishes a whole frame and
// half of a second one, then dies (its bell ends): the whole frame is
// delivered, the half one never is, and the Conn fails with ErrEOF.
func TestPipeDeathMidFrame(t *testing.T) {
	leakCheck(t)
	l := newLoop(t, ioloop.Options{})
	rx := newTestHandler()
	_, raw, bell, _ := rawPipe(t, l, 64<<10, rx)
	first := frame.Header{Kind: frame.KindSend, Tag: 1}
	second := frame.Header{Kind: frame.KindSend, Tag: 2}
	whole := encodeFrame(first, patterned(1, 1000))
	half := encodeFrame(second, patterned(2, 3000))[:1500]
	for _, b := range [][]byte{whole, half} {
		if n, err := raw.Write(b); err != nil || n != len(b) {
			t.Fatalf("raw write: %d, %v", n, err)
		}
	}
	unix.Close(bell) // the process's exit closes it
	assertConnError(t, rx.waitClosed(t), ioloop.ErrEOF)
	got := rx.snapshot()
	if len(got) != 1 {
		t.Fatalf("%d frames delivered, want the whole one only", len(got))
	}
	assertFrame(t, got[0], first, patterned(1, 1000), false)
	rx.check(t)
}

// TestPipeCloseDrains: frames written before Close reach the other side,
// which then sees ErrEOF; the closer sees ErrClosed.
func TestPipeCloseDrains(t *testing.T) {
	leakCheck(t)
	l := newLoop(t, ioloop.Options{})
	tx, rx := newTestHandler(), newTestHandler()
	ca, _ := pipePair(t, l, 16<<10, tx, rx)
	const n = 50
	for i := range n {
		h := frame.Header{Kind: frame.KindSend, Aux: uint32(i)}
		if err := ca.Send(&h, patterned(uint64(i), 200)); err != nil {
			t.Fatal(err)
		}
	}
	ca.Close()
	assertConnError(t, rx.waitClosed(t), ioloop.ErrEOF)
	assertConnError(t, tx.waitClosed(t), ioloop.ErrClosed)
	if got := rx.snapshot(); len(got) != n {
		t.Fatalf("%d frames delivered before EOF, want %d", len(got), n)
	}
	rx.check(t)
}

// TestPipeDirtyMemory: InitPipe zeroes only the header and the control
// lines, so a pipe in memory full of other bytes carries frames both
// ways, around its rings several times, as one in fresh memory does.
func TestPipeDirtyMemory(t *testing.T) {
	leakCheck(t)
	l := newLoop(t, ioloop.Options{})
	ha, hb := newTestHandler(), newTestHandler()
	ca, cb := pipePairFilled(t, l, 16<<10, 0xa5, ha, hb)
	const n = 300 // 300 frames of up to 700 bytes: about 6 times round a 16 KiB ring
	for i := range n {
		for _, c := range []*ioloop.Conn{ca, cb} {
			h := frame.Header{Kind: frame.KindSend, Aux: uint32(i)}
			if err := c.Send(&h, patterned(uint64(i), 100+i*2)); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, rx := range []*testHandler{ha, hb} {
		got := rx.waitFrames(t, n)
		for i, f := range got {
			assertFrame(t, f, frame.Header{Kind: frame.KindSend, Aux: uint32(i)}, patterned(uint64(i), 100+i*2), false)
		}
		rx.check(t)
	}
	ca.Close()
	cb.Close()
}

// TestPipeCorruptTail: a tail that claims more than the ring holds fails
// the Conn with ErrProtocol, and nothing is delivered.
func TestPipeCorruptTail(t *testing.T) {
	leakCheck(t)
	l := newLoop(t, ioloop.Options{})
	rx := newTestHandler()
	const ring = 16 << 10
	_, _, bell, mem := rawPipe(t, l, ring, rx)
	// Side 1 writes ring 1, whose tail is the first word of its control.
	tail := (*uint64)(unsafe.Pointer(&mem[ioloop.PipeRingAt(ring, 1)]))
	atomic.StoreUint64(tail, 2*ring)
	unix.Write(bell, []byte{1})
	assertConnError(t, rx.waitClosed(t), ioloop.ErrProtocol)
	if rx.count() != 0 {
		t.Errorf("%d frames delivered from a corrupt ring", rx.count())
	}
}

// TestPipePollingNoBells: while a goroutine polls the receiving Conn
// (Polling), the sender rings no bell per frame; once it stops, a frame
// rings one and the loop delivers it.
func TestPipePollingNoBells(t *testing.T) {
	leakCheck(t)
	var bells atomic.Int64
	ioloop.SetTestHookBell(func() { bells.Add(1) })
	t.Cleanup(func() { ioloop.SetTestHookBell(nil) })
	l := newLoop(t, ioloop.Options{})
	rx := newTestHandler()
	ca, cb := pipePair(t, l, 64<<10, newTestHandler(), rx)
	h := frame.Header{Kind: frame.KindSend}
	if err := ca.Send(&h, patterned(0, 10)); err != nil { // the receiver's loop asks for a bell after it
		t.Fatal(err)
	}
	rx.waitFrames(t, 1)
	time.Sleep(10 * time.Millisecond)
	cb.Polling(true)
	before := bells.Load()
	const n = 200
	for i := range n {
		h := frame.Header{Kind: frame.KindSend, Aux: uint32(i)}
		if err := ca.Send(&h, patterned(uint64(i), 64)); err != nil {
			t.Fatal(err)
		}
		for rx.count() < i+2 {
			cb.Poll()
		}
	}
	if got := bells.Load() - before; got > 1 {
		t.Errorf("%d bells for %d frames while the receiver polled, want at most 1", got, n)
	}
	cb.Polling(false)
	time.Sleep(10 * time.Millisecond)
	before = bells.Load()
	if err := ca.Send(&h, patterned(7, 10)); err != nil {
		t.Fatal(err)
	}
	rx.waitFrames(t, n+2)
	if got := bells.Load() - before; got != 1 {
		t.Errorf("%d bells for a frame nobody polls for, want 1", got)
	}
	rx.check(t)
}

// TestPipePollingOffReadsWhatCame: frames that came while a goroutine
// polled the receiving Conn but did not read it (no bell rang for them)
// are delivered by Polling(false) itself, before it returns; and a frame
// that comes after it rings a bell, for the loop to deliver.
func TestPipePollingOffReadsWhatCame(t *testing.T) {
	leakCheck(t)
	var bells atomic.Int64
	ioloop.SetTestHookBell(func() { bells.Add(1) })
	t.Cleanup(func() { ioloop.SetTestHookBell(nil) })
	l := newLoop(t, ioloop.Options{})
	rx := newTestHandler()
	ca, cb := pipePair(t, l, 64<<10, newTestHandler(), rx)
	h := frame.Header{Kind: frame.KindSend}
	if err := ca.Send(&h, patterned(0, 10)); err != nil {
		t.Fatal(err)
	}
	rx.waitFrames(t, 1)
	time.Sleep(10 * time.Millisecond)
	cb.Polling(true)
	before := bells.Load()
	const n = 20
	for i := range n {
		h := frame.Header{Kind: frame.KindSend, Aux: uint32(i)}
		if err := ca.Send(&h, patterned(uint64(i), 100)); err != nil {
			t.Fatal(err)
		}
	}
	if got := bells.Load() - before; got != 0 {
		t.Fatalf("%d bells while the receiver polled, want none", got)
	}
	cb.Polling(false)
	if got := rx.count(); got != n+1 {
		t.Fatalf("%d frames delivered when Polling(false) returned, want %d", got, n+1)
	}
	before = bells.Load()
	if err := ca.Send(&h, patterned(9, 10)); err != nil {
		t.Fatal(err)
	}
	rx.waitFrames(t, n+2)
	if got := bells.Load() - before; got != 1 {
		t.Errorf("%d bells for a frame nobody polls for, want 1", got)
	}
	rx.check(t)
}

// TestInitPipeRefuses: ring sizes that are not a power of two of at
// least MinPipeRing, and memory too small, are refused.
func TestInitPipeRefuses(t *testing.T) {
	mem := make([]byte, ioloop.PipeSize(ioloop.MinPipeRing))
	for _, ring := range []int{0, ioloop.MinPipeRing - 1, ioloop.MinPipeRing + 64, 2 * ioloop.MinPipeRing} {
		if err := ioloop.InitPipe(mem, ring); err == nil {
			t.Errorf("InitPipe with ring %d in %d bytes: no error", ring, len(mem))
		}
	}
	if err := ioloop.InitPipe(mem, ioloop.MinPipeRing); err != nil {
		t.Errorf("InitPipe with ring %d: %v", ioloop.MinPipeRing, err)
	}
	if _, err := ioloop.NewRawPipe(make([]byte, len(mem)), 0, -1); err == nil {
		t.Error("a pipe opened in memory InitPipe never prepared")
	}
	if _, err := ioloop.NewRawPipe(mem, 2, -1); err == nil {
		t.Error("side 2 accepted")
	}
}

// TestPipePollingAfterRelease: Polling on a pipe whose memory is gone
// (both sides closed and released it) touches nothing: a poller that
// starts as the connection ends must not fault.
func TestPipePollingAfterRelease(t *testing.T) {
	leakCheck(t)
	l := newLoop(t, ioloop.Options{})
	ha, hb := newTestHandler(), newTestHandler()
	ca, cb := pipePair(t, l, 16<<10, ha, hb)
	ca.Close()
	cb.Close()
	ha.waitClosed(t)
	hb.waitClosed(t)
	for _, c := range []*ioloop.Conn{ca, cb} {
		c.Polling(true)
		c.Poll()
		c.Polling(false)
	}
}

// FuzzPipeRead: whatever the other process writes into the words of a
// pipe (its tail, the room it asks for) and its ring, a read copies at
// most what was asked, never past the ring, and refuses a tail that
// claims more than the ring holds with ErrProtocol.
func FuzzPipeRead(f *testing.F) {
	f.Add(uint64(0), uint64(0), uint32(0), []byte{})
	f.Add(uint64(100), uint64(0), uint32(1), []byte("hello"))
	f.Add(uint64(1<<63), uint64(5), uint32(7), []byte{1, 2, 3})
	f.Add(uint64(ioloop.MinPipeRing+1), uint64(0), uint32(0), []byte{9})
	const ring = ioloop.MinPipeRing
	mem := make([]byte, ioloop.PipeSize(ring))
	f.Fuzz(func(t *testing.T, tail, start uint64, room uint32, data []byte) {
		if err := ioloop.InitPipe(mem, ring); err != nil {
			t.Fatal(err)
		}
		// Ring 1 is read by side 0: its words after the header and ring 0.
		base := ioloop.PipeRingAt(ring, 1)
		*(*uint64)(unsafe.Pointer(&mem[base])) = tail
		*(*uint64)(unsafe.Pointer(&mem[base+ioloop.PipeHeadOff])) = start
		*(*uint32)(unsafe.Pointer(&mem[base+ioloop.PipeWantRoomOff])) = room &^ 1 // no bell: there is no socket
		copy(mem[base+ioloop.PipeDataOff:base+ioloop.PipeDataOff+ring], data)
		p, err := ioloop.NewRawPipe(mem, 0, -1)
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 2*ring)
		total := uint64(0)
		for range 4 {
			n, err := p.Read(buf[:ring/2+1])
			switch {
			case errors.Is(err, ioloop.ErrProtocol):
				if tail-start-total <= ring {
					t.Fatalf("tail %d, head %d: refused as corrupt", tail, start+total)
				}
				return
			case err != nil:
				return // empty
			case n < 0 || n > ring/2+1:
				t.Fatalf("read %d bytes into %d", n, ring/2+1)
			}
			total += uint64(n)
		}
		if total > ring {
			t.Fatalf("read %d bytes from a ring of %d", total, ring)
		}
	})
}

// TestPipeSpinningWriterNoBells: a sender that retries a write itself
// (Options.Spin) while the ring is full asks for no bell for room: a
// frame four times the ring, read by a polling receiver, moves with no
// bell at all.
func TestPipeSpinningWriterNoBells(t *testing.T) {
	leakCheck(t)
	var bells atomic.Int64
	ioloop.SetTestHookBell(func() { bells.Add(1) })
	t.Cleanup(func() { ioloop.SetTestHookBell(nil) })
	l := newLoop(t, ioloop.Options{Spin: time.Second})
	rx := newTestHandler()
	rx.named = namedAll
	ca, cb := pipePair(t, l, 16<<10, newTestHandler(), rx)
	time.Sleep(10 * time.Millisecond) // the receiver's loop has asked for its first bell
	cb.Polling(true)
	before := bells.Load()
	sent := make(chan error, 1)
	payload := patterned(3, 64<<10)
	go func() {
		h := frame.Header{Kind: frame.KindSend}
		sent <- ca.Send(&h, payload)
	}()
	for rx.count() < 1 {
		cb.Poll()
	}
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	if got := bells.Load() - before; got > 1 {
		t.Errorf("%d bells for a frame of 4 rings between a spinning sender and a polling receiver, want at most 1", got)
	}
	cb.Polling(false)
	assertFrame(t, rx.snapshot()[0], frame.Header{Kind: frame.KindSend}, payload, true)
	rx.check(t)
}

// TestPipePollServesEdge: a bell that comes while a lazy Poll holds the
// read side, before it looks at pending, is served by that Poll strictly:
// it asks for the next bell, so a frame written after it is delivered.
// (A Poll that cleared pending and then drained lazily left the pipe
// unarmed, the writer rang no bell for the next frame, and it sat in the
// ring: TestFloodBounded/rts hung that way.)
func TestPipePollServesEdge(t *testing.T) {
	leakCheck(t)
	var (
		inPoll atomic.Bool
		c      *ioloop.Conn
		raw    *ioloop.RawPipe
	)
	write := func(tag uint32) {
		b := encodeFrame(frame.Header{Kind: frame.KindSend, Tag: tag}, patterned(uint64(tag), 100))
		if n, err := raw.Write(b); err != nil || n != len(b) {
			t.Fatalf("raw write: %d, %v", n, err)
		}
	}
	ioloop.SetTestHookLocked(func(int) {
		if !inPoll.CompareAndSwap(true, false) {
			return
		}
		write(2) // rings the bell the loop's last drain asked for
		waitFor(t, "the loop to see the bell while Poll holds the read side", func() bool { return ioloop.ReadPending(c) })
	})
	t.Cleanup(func() { ioloop.SetTestHookLocked(nil) })
	l := newLoop(t, ioloop.Options{})
	rx := newTestHandler()
	c, raw, _, _ = rawPipe(t, l, 64<<10, rx)
	write(1) // registration's drain asked for a bell: the loop delivers it
	rx.waitFrames(t, 1)
	inPoll.Store(true)
	for deadline := time.Now().Add(waitTimeout); inPoll.Load(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("Poll never took the read side")
		}
		c.Poll() // does nothing while the loop's drain of frame 1 holds it
	}
	rx.waitFrames(t, 2)
	write(3) // rings only if the drain that served the bell asked again
	rx.waitFrames(t, 3)
	for i, f := range rx.snapshot() {
		assertFrame(t, f, frame.Header{Kind: frame.KindSend, Tag: uint32(i + 1)}, patterned(uint64(i+1), 100), false)
	}
	rx.check(t)
}
