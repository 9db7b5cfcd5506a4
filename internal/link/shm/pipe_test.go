package shm_test

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/boltmesh/boltmesh/frame"
	"github.com/boltmesh/boltmesh/internal/link/shm"
	"github.com/boltmesh/boltmesh/internal/looptest"
	"github.com/boltmesh/boltmesh/ioloop"
	"golang.org/x/sys/unix"
)

// TestPipeDeathMidFrame: the other process publishes a whole frame and
// half of a second one, then dies (its bell ends): the whole frame is
// delivered, the half one never is, and the Conn fails with ErrEOF.
func TestPipeDeathMidFrame(t *testing.T) {
	looptest.LeakCheck(t)
	l := looptest.NewLoop(t, ioloop.Options{})
	rx := looptest.NewHandler()
	_, raw, bell, _ := looptest.RawPipe(t, l, 64<<10, rx)
	first := frame.Header{Kind: frame.KindSend, Tag: 1}
	second := frame.Header{Kind: frame.KindSend, Tag: 2}
	whole := looptest.EncodeFrame(first, looptest.Patterned(1, 1000))
	half := looptest.EncodeFrame(second, looptest.Patterned(2, 3000))[:1500]
	for _, b := range [][]byte{whole, half} {
		if n, err := raw.Writev([][]byte{b}); err != nil || n != len(b) {
			t.Fatalf("raw write: %d, %v", n, err)
		}
	}
	unix.Close(bell) // the process's exit closes it
	looptest.AssertConnError(t, rx.WaitClosed(t), ioloop.ErrEOF)
	got := rx.Snapshot()
	if len(got) != 1 {
		t.Fatalf("%d frames delivered, want the whole one only", len(got))
	}
	looptest.AssertFrame(t, got[0], first, looptest.Patterned(1, 1000), false)
	rx.Check(t)
}

// TestPipeCloseDrains: frames written before Close reach the other side,
// which then sees ErrEOF; the closer sees ErrClosed.
func TestPipeCloseDrains(t *testing.T) {
	looptest.LeakCheck(t)
	l := looptest.NewLoop(t, ioloop.Options{})
	tx, rx := looptest.NewHandler(), looptest.NewHandler()
	ca, _ := looptest.PipePair(t, l, 16<<10, tx, rx)
	const n = 50
	for i := range n {
		h := frame.Header{Kind: frame.KindSend, Aux: uint32(i)}
		if err := ca.Send(&h, looptest.Patterned(uint64(i), 200)); err != nil {
			t.Fatal(err)
		}
	}
	ca.Close()
	looptest.AssertConnError(t, rx.WaitClosed(t), ioloop.ErrEOF)
	looptest.AssertConnError(t, tx.WaitClosed(t), ioloop.ErrClosed)
	if got := rx.Snapshot(); len(got) != n {
		t.Fatalf("%d frames delivered before EOF, want %d", len(got), n)
	}
	rx.Check(t)
}

// TestPipeDirtyMemory: InitPipe zeroes only the header and the control
// lines, so a pipe in memory full of other bytes carries frames both
// ways, around its rings several times, as one in fresh memory does.
func TestPipeDirtyMemory(t *testing.T) {
	looptest.LeakCheck(t)
	l := looptest.NewLoop(t, ioloop.Options{})
	ha, hb := looptest.NewHandler(), looptest.NewHandler()
	ca, cb, _, _ := looptest.Pipes(t, l, 16<<10, 0xa5, ha, hb)
	const n = 300 // 300 frames of up to 700 bytes: about 6 times round a 16 KiB ring
	for i := range n {
		for _, c := range []*ioloop.Conn{ca, cb} {
			h := frame.Header{Kind: frame.KindSend, Aux: uint32(i)}
			if err := c.Send(&h, looptest.Patterned(uint64(i), 100+i*2)); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, rx := range []*looptest.Handler{ha, hb} {
		got := rx.WaitFrames(t, n)
		for i, f := range got {
			looptest.AssertFrame(t, f, frame.Header{Kind: frame.KindSend, Aux: uint32(i)}, looptest.Patterned(uint64(i), 100+i*2), false)
		}
		rx.Check(t)
	}
	ca.Close()
	cb.Close()
}

// TestPipeCorruptTail: a tail that claims more than the ring holds fails
// the Conn with ErrProtocol, and nothing is delivered.
func TestPipeCorruptTail(t *testing.T) {
	looptest.LeakCheck(t)
	l := looptest.NewLoop(t, ioloop.Options{})
	rx := looptest.NewHandler()
	const ring = 16 << 10
	_, _, bell, mem := looptest.RawPipe(t, l, ring, rx)
	// Side 1 writes ring 1, whose tail is the first word of its control.
	tail := (*uint64)(unsafe.Pointer(&mem[shm.PipeRingAt(ring, 1)]))
	atomic.StoreUint64(tail, 2*ring)
	unix.Write(bell, []byte{1})
	looptest.AssertConnError(t, rx.WaitClosed(t), ioloop.ErrProtocol)
	if rx.Count() != 0 {
		t.Errorf("%d frames delivered from a corrupt ring", rx.Count())
	}
}

// TestPipePollingNoBells: while a goroutine polls the receiving Conn
// (Polling), the sender rings no bell per frame; once it stops, a frame
// rings one and the loop delivers it.
func TestPipePollingNoBells(t *testing.T) {
	looptest.LeakCheck(t)
	var bells atomic.Int64
	shm.SetTestHookBell(func() { bells.Add(1) })
	t.Cleanup(func() { shm.SetTestHookBell(nil) })
	l := looptest.NewLoop(t, ioloop.Options{})
	rx := looptest.NewHandler()
	ca, cb := looptest.PipePair(t, l, 64<<10, looptest.NewHandler(), rx)
	h := frame.Header{Kind: frame.KindSend}
	if err := ca.Send(&h, looptest.Patterned(0, 10)); err != nil { // the receiver's loop asks for a bell after it
		t.Fatal(err)
	}
	rx.WaitFrames(t, 1)
	time.Sleep(10 * time.Millisecond)
	cb.Polling(true)
	before := bells.Load()
	const n = 200
	for i := range n {
		h := frame.Header{Kind: frame.KindSend, Aux: uint32(i)}
		if err := ca.Send(&h, looptest.Patterned(uint64(i), 64)); err != nil {
			t.Fatal(err)
		}
		for rx.Count() < i+2 {
			cb.Poll()
		}
	}
	if got := bells.Load() - before; got > 1 {
		t.Errorf("%d bells for %d frames while the receiver polled, want at most 1", got, n)
	}
	cb.Polling(false)
	time.Sleep(10 * time.Millisecond)
	before = bells.Load()
	if err := ca.Send(&h, looptest.Patterned(7, 10)); err != nil {
		t.Fatal(err)
	}
	rx.WaitFrames(t, n+2)
	if got := bells.Load() - before; got != 1 {
		t.Errorf("%d bells for a frame nobody polls for, want 1", got)
	}
	rx.Check(t)
}

// TestPipePollingOffReadsWhatCame: frames that came while a goroutine
// polled the receiving Conn but did not read it (no bell rang for them)
// are delivered by Polling(false) itself, before it returns; and a frame
// that comes after it rings a bell, for the loop to deliver.
func TestPipePollingOffReadsWhatCame(t *testing.T) {
	looptest.LeakCheck(t)
	var bells atomic.Int64
	shm.SetTestHookBell(func() { bells.Add(1) })
	t.Cleanup(func() { shm.SetTestHookBell(nil) })
	l := looptest.NewLoop(t, ioloop.Options{})
	rx := looptest.NewHandler()
	ca, cb := looptest.PipePair(t, l, 64<<10, looptest.NewHandler(), rx)
	h := frame.Header{Kind: frame.KindSend}
	if err := ca.Send(&h, looptest.Patterned(0, 10)); err != nil {
		t.Fatal(err)
	}
	rx.WaitFrames(t, 1)
	time.Sleep(10 * time.Millisecond)
	cb.Polling(true)
	before := bells.Load()
	const n = 20
	for i := range n {
		h := frame.Header{Kind: frame.KindSend, Aux: uint32(i)}
		if err := ca.Send(&h, looptest.Patterned(uint64(i), 100)); err != nil {
			t.Fatal(err)
		}
	}
	if got := bells.Load() - before; got != 0 {
		t.Fatalf("%d bells while the receiver polled, want none", got)
	}
	cb.Polling(false)
	if got := rx.Count(); got != n+1 {
		t.Fatalf("%d frames delivered when Polling(false) returned, want %d", got, n+1)
	}
	before = bells.Load()
	if err := ca.Send(&h, looptest.Patterned(9, 10)); err != nil {
		t.Fatal(err)
	}
	rx.WaitFrames(t, n+2)
	if got := bells.Load() - before; got != 1 {
		t.Errorf("%d bells for a frame nobody polls for, want 1", got)
	}
	rx.Check(t)
}

// TestInitPipeRefuses: ring sizes that are not a power of two of at
// least MinPipeRing, and memory too small, are refused.
func TestInitPipeRefuses(t *testing.T) {
	mem := make([]byte, shm.PipeSize(shm.MinPipeRing))
	for _, ring := range []int{0, shm.MinPipeRing - 1, shm.MinPipeRing + 64, 2 * shm.MinPipeRing} {
		if err := shm.InitPipe(mem, ring); err == nil {
			t.Errorf("InitPipe with ring %d in %d bytes: no error", ring, len(mem))
		}
	}
	if err := shm.InitPipe(mem, shm.MinPipeRing); err != nil {
		t.Errorf("InitPipe with ring %d: %v", shm.MinPipeRing, err)
	}
	if _, err := shm.NewRawPipe(make([]byte, len(mem)), 0, -1); err == nil {
		t.Error("a pipe opened in memory InitPipe never prepared")
	}
	if _, err := shm.NewRawPipe(mem, 2, -1); err == nil {
		t.Error("side 2 accepted")
	}
}

// TestPipePollingAfterRelease: Polling on a pipe whose memory is gone
// (both sides closed and released it) touches nothing: a poller that
// starts as the connection ends must not fault.
func TestPipePollingAfterRelease(t *testing.T) {
	looptest.LeakCheck(t)
	l := looptest.NewLoop(t, ioloop.Options{})
	ha, hb := looptest.NewHandler(), looptest.NewHandler()
	ca, cb := looptest.PipePair(t, l, 16<<10, ha, hb)
	ca.Close()
	cb.Close()
	ha.WaitClosed(t)
	hb.WaitClosed(t)
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
	f.Add(uint64(shm.MinPipeRing+1), uint64(0), uint32(0), []byte{9})
	const ring = shm.MinPipeRing
	mem := make([]byte, shm.PipeSize(ring))
	f.Fuzz(func(t *testing.T, tail, start uint64, room uint32, data []byte) {
		if err := shm.InitPipe(mem, ring); err != nil {
			t.Fatal(err)
		}
		// Ring 1 is read by side 0: its words after the header and ring 0.
		base := shm.PipeRingAt(ring, 1)
		*(*uint64)(unsafe.Pointer(&mem[base])) = tail
		*(*uint64)(unsafe.Pointer(&mem[base+shm.PipeHeadOff])) = start
		*(*uint32)(unsafe.Pointer(&mem[base+shm.PipeWantRoomOff])) = room &^ 1 // no bell: there is no socket
		copy(mem[base+shm.PipeDataOff:base+shm.PipeDataOff+ring], data)
		p, err := shm.NewRawPipe(mem, 0, -1)
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
	looptest.LeakCheck(t)
	var bells atomic.Int64
	shm.SetTestHookBell(func() { bells.Add(1) })
	t.Cleanup(func() { shm.SetTestHookBell(nil) })
	l := looptest.NewLoop(t, ioloop.Options{Spin: time.Second})
	rx := looptest.NewHandler()
	rx.Named = looptest.NamedAll
	ca, cb := looptest.PipePair(t, l, 16<<10, looptest.NewHandler(), rx)
	time.Sleep(10 * time.Millisecond) // the receiver's loop has asked for its first bell
	cb.Polling(true)
	before := bells.Load()
	sent := make(chan error, 1)
	payload := looptest.Patterned(3, 64<<10)
	go func() {
		h := frame.Header{Kind: frame.KindSend}
		sent <- ca.Send(&h, payload)
	}()
	for rx.Count() < 1 {
		cb.Poll()
	}
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	if got := bells.Load() - before; got > 1 {
		t.Errorf("%d bells for a frame of 4 rings between a spinning sender and a polling receiver, want at most 1", got)
	}
	cb.Polling(false)
	looptest.AssertFrame(t, rx.Snapshot()[0], frame.Header{Kind: frame.KindSend}, payload, true)
	rx.Check(t)
}
