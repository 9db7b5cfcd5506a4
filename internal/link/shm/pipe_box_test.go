package shm_test

import (
	"bytes"
	"errors"
	"math/rand/v2"
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

// TestPipeBoxStream: writes of every size from 1 byte to several KiB, in
// random order, read back in random pieces between them, come out as the
// one stream they went in as, though the short ones go through the box
// and the rest (and the short ones that find the box full) through the
// ring: a box message is read after the ring's bytes before it and
// before those after it.
func TestPipeBoxStream(t *testing.T) {
	const ring = shm.MinPipeRing
	mem := make([]byte, shm.PipeSize(ring))
	if err := shm.InitPipe(mem, ring); err != nil {
		t.Fatal(err)
	}
	tx, err := shm.NewRawPipe(mem, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	rx, err := shm.NewRawPipe(mem, 1, -1)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var sent, got []byte
	buf := make([]byte, 3*ring)
	for i := range 20000 {
		n := 1 + rng.IntN(shm.BoxCap+8)
		if i%7 == 0 {
			n = 1 + rng.IntN(ring/2)
		}
		b := looptest.Patterned(uint64(i), n)
		w, err := tx.Write(b)
		if err != nil && !errors.Is(err, unix.EAGAIN) {
			t.Fatalf("write %d: %v", i, err)
		}
		sent = append(sent, b[:w]...)
		for range rng.IntN(3) { // sometimes none: the box fills up
			r, err := rx.Read(buf[:1+rng.IntN(len(buf))])
			if err != nil && !errors.Is(err, unix.EAGAIN) {
				t.Fatalf("read after write %d: %v", i, err)
			}
			got = append(got, buf[:r]...)
		}
	}
	for {
		r, err := rx.Read(buf)
		if r == 0 || err != nil {
			break
		}
		got = append(got, buf[:r]...)
	}
	if !bytes.Equal(got, sent) {
		t.Fatalf("read %d bytes, wrote %d; first difference at %d", len(got), len(sent), looptest.FirstDiff(got, sent))
	}
	boxed, ringed := tx.Boxed(), tx.Ringed()
	if boxed == 0 || ringed == 0 {
		t.Fatalf("%d writes through the box, %d bytes through the ring: want both", boxed, ringed)
	}
	t.Logf("%d bytes: %d writes through the box, %d bytes through the ring", len(sent), boxed, ringed)
}

// TestPipeBoxRewritten: the other process rewrites a box message's word
// after part of the message was read, to a length shorter than what was
// read: the next read refuses the pipe with ErrProtocol, and copies
// nothing (it sliced the slot past its end, and panicked, when it loaded
// the length again instead of taking the one it checked).
func TestPipeBoxRewritten(t *testing.T) {
	const ring = shm.MinPipeRing
	mem := make([]byte, shm.PipeSize(ring))
	if err := shm.InitPipe(mem, ring); err != nil {
		t.Fatal(err)
	}
	tx, err := shm.NewRawPipe(mem, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	rx, err := shm.NewRawPipe(mem, 1, -1)
	if err != nil {
		t.Fatal(err)
	}
	msg := looptest.Patterned(1, 40)
	if n, err := tx.Write(msg); n != len(msg) || err != nil || tx.Boxed() != 1 {
		t.Fatalf("write: %d, %v, %d through the box", n, err, tx.Boxed())
	}
	buf := make([]byte, 64)
	if n, err := rx.Read(buf[:10]); n != 10 || err != nil || !bytes.Equal(buf[:10], msg[:10]) {
		t.Fatalf("first read: %d, %v", n, err)
	}
	// Ring 0 is written by side 0: its box's first slot holds the message.
	word := (*uint64)(unsafe.Pointer(&mem[shm.PipeRingAt(ring, 0)+shm.PipeBoxOff]))
	*word = 1<<8 | 5
	if n, err := rx.Read(buf); !errors.Is(err, ioloop.ErrProtocol) || n != 0 {
		t.Fatalf("read after the rewrite: %d, %v; want 0 and ErrProtocol", n, err)
	}
}

// FuzzPipeBoxRead: whatever the other process writes into a box slot
// (its word, the position it claims, its bytes) and the ring's tail, a
// read copies at most what was asked, refuses what is out of range with
// ErrProtocol, and never reads a box message before the ring's bytes it
// claims to follow.
func FuzzPipeBoxRead(f *testing.F) {
	f.Add(uint64(1<<8|40), uint64(0), uint64(0), uint8(0), []byte("boxed"))
	f.Add(uint64(1<<8|40), uint64(10), uint64(20), uint8(0), []byte("after ten ring bytes"))
	f.Add(uint64(1<<8|200), uint64(0), uint64(0), uint8(0), []byte{})
	f.Add(uint64(7<<8|1), uint64(0), uint64(0), uint8(3), []byte{1})
	f.Add(uint64(1<<8|1), uint64(1<<63), uint64(5), uint8(0), []byte{1})
	const ring = shm.MinPipeRing
	mem := make([]byte, shm.PipeSize(ring))
	f.Fuzz(func(t *testing.T, word, pos, tail uint64, slot uint8, data []byte) {
		if err := shm.InitPipe(mem, ring); err != nil {
			t.Fatal(err)
		}
		// Ring 1 is read by side 0.
		base := shm.PipeRingAt(ring, 1)
		s := base + shm.PipeBoxOff + int(slot%shm.BoxSlots)*shm.BoxSlot
		*(*uint64)(unsafe.Pointer(&mem[base])) = tail
		*(*uint64)(unsafe.Pointer(&mem[s])) = word
		*(*uint64)(unsafe.Pointer(&mem[s+8])) = pos
		copy(mem[s+16:s+shm.BoxSlot], data)
		copy(mem[base+shm.PipeDataOff:base+shm.PipeDataOff+ring], data)
		p, err := shm.NewRawPipe(mem, 0, -1)
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 2*ring)
		ringBytes := uint64(0)
		for range 4 {
			want := 1 + len(data)%(ring/2)
			n, err := p.Read(buf[:want])
			switch {
			case errors.Is(err, ioloop.ErrProtocol):
				return
			case err != nil:
				return // empty
			case n < 0 || n > want:
				t.Fatalf("read %d bytes into %d", n, want)
			}
			if boxed := p.BoxedRead(); boxed == 0 {
				ringBytes += uint64(n)
			} else if ringBytes < pos {
				t.Fatalf("a box message said to follow %d ring bytes read after %d", pos, ringBytes)
			}
		}
		if ringBytes > ring {
			t.Fatalf("read %d bytes from a ring of %d", ringBytes, ring)
		}
	})
}

// TestPipePolledAsksLate: a poller that stops with Polled leaves the pipe
// without asking for a bell (a ping-pong's rounds write no word the
// writer loads), and a frame that comes while nobody polls is still
// read, by the late arm, without anybody polling or sleeping on it.
func TestPipePolledAsksLate(t *testing.T) {
	looptest.LeakCheck(t)
	asks := countHook(t, shm.SetTestHookAsk)
	l := looptest.NewLoop(t, ioloop.Options{})
	rx := looptest.NewHandler()
	ca, cb, _, pb := looptest.Pipes(t, l, 16<<10, 0, looptest.NewHandler(), rx)
	settlePipe(t, ca, pb, rx)
	const rounds = 200
	before := asks.Load()
	for i := 1; i < rounds; i++ {
		cb.Polling(true)
		h := frame.Header{Kind: frame.KindSend, Aux: uint32(i)}
		if err := ca.Send(&h, looptest.Patterned(uint64(i), 8)); err != nil {
			t.Fatal(err)
		}
		for rx.Count() <= i {
			cb.Poll()
		}
		cb.Polled()
	}
	// Each Polling(false) would have asked once; the late arm asks only
	// once nobody has polled for a while, which 200 rounds take less than
	// (but for a descheduling: a few are let pass).
	if got := asks.Load() - before; got > rounds/20 {
		t.Errorf("%d asks for a bell in %d rounds stopped with Polled", got, rounds)
	}
	looptest.WaitFor(t, "the late arm to ask for a bell", func() bool { return shm.Asked(pb) })
	// Nobody polls now: a frame is read by the loop, after the bell.
	h := frame.Header{Kind: frame.KindSend, Aux: rounds}
	if err := ca.Send(&h, looptest.Patterned(rounds, 8)); err != nil {
		t.Fatal(err)
	}
	got := rx.WaitFrames(t, rounds+1)
	for i, f := range got {
		looptest.AssertFrame(t, f, frame.Header{Kind: frame.KindSend, Aux: uint32(i)}, looptest.Patterned(uint64(i), 8), false)
	}
	rx.Check(t)
}

// TestPipeLateArmReadsWhatCame: a frame that came after a Polled, before
// the late arm asked for a bell, is read once it asks: nobody polls or
// sleeps on the pipe, and no bell rings for it.
func TestPipeLateArmReadsWhatCame(t *testing.T) {
	looptest.LeakCheck(t)
	l := looptest.NewLoop(t, ioloop.Options{})
	rx := looptest.NewHandler()
	ca, cb, _, pb := looptest.Pipes(t, l, 16<<10, 0, looptest.NewHandler(), rx)
	settlePipe(t, ca, pb, rx)
	cb.Polling(true)
	if shm.Asked(pb) {
		t.Fatal("a polled pipe still asks for a bell")
	}
	cb.Polled()
	h := frame.Header{Kind: frame.KindSend, Aux: 1}
	start := time.Now()
	if err := ca.Send(&h, looptest.Patterned(1, 8)); err != nil {
		t.Fatal(err)
	}
	got := rx.WaitFrames(t, 2)
	looptest.AssertFrame(t, got[1], h, looptest.Patterned(1, 8), false)
	t.Logf("read %v after it was sent", time.Since(start))
	rx.Check(t)
}

// settlePipe sends frame 0 from ca to cb (pipe pb), whose handler is rx,
// and waits for it: the loop has then seen cb's first readiness (a
// registered socket is reported writable, and the loop looks at both
// rings for it, whenever it comes to it), and cb asks for a bell.
func settlePipe(t *testing.T, ca *ioloop.Conn, pb *shm.Pipe, rx *looptest.Handler) {
	t.Helper()
	h := frame.Header{Kind: frame.KindSend}
	if err := ca.Send(&h, looptest.Patterned(0, 8)); err != nil {
		t.Fatal(err)
	}
	rx.WaitFrames(t, 1)
	looptest.WaitFor(t, "the pipe to ask for a bell", func() bool { return shm.Asked(pb) })
}

// TestPipeSettle: what the late arm does once due, after a Polled, asks
// for a bell at once: the next frame rings it.
func TestPipeSettle(t *testing.T) {
	looptest.LeakCheck(t)
	bells := countHook(t, shm.SetTestHookBell)
	l := looptest.NewLoop(t, ioloop.Options{})
	rx := looptest.NewHandler()
	ca, cb, _, pb := looptest.Pipes(t, l, 16<<10, 0, looptest.NewHandler(), rx)
	cb.Polling(true)
	cb.Polled()
	shm.Settle(pb)
	if !shm.Asked(pb) {
		t.Fatal("Settle did not ask for a bell")
	}
	before := bells.Load()
	h := frame.Header{Kind: frame.KindSend, Tag: 6}
	if err := ca.Send(&h, looptest.Patterned(6, 8)); err != nil {
		t.Fatal(err)
	}
	got := rx.WaitFrames(t, 1)
	looptest.AssertFrame(t, got[0], h, looptest.Patterned(6, 8), false)
	if n := bells.Load() - before; n != 1 {
		t.Errorf("%d bells for a frame sent after Settle, want 1", n)
	}
	rx.Check(t)
}

// countHook installs, with set, a hook that counts its calls, removed at
// the test's end, and returns the count.
func countHook(t testing.TB, set func(func())) *atomic.Int64 {
	var n atomic.Int64
	set(func() { n.Add(1) })
	t.Cleanup(func() { set(nil) })
	return &n
}
