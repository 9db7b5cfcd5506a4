package shm

import (
	"encoding/binary"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/boltmesh/boltmesh/ioloop"
	"golang.org/x/sys/unix"
)

// A Pipe is a connection's byte stream in memory shared with the process
// at the other end: two single-producer single-consumer rings, one per
// direction, in a region both map. It is an ioloop.Stream: the Conn
// reads and writes it as it would a socket, so frames, payloads read
// straight into their destination, backpressure and deferral work
// unchanged; only the bytes take no system call. A connected Unix stream
// socket beside it, the bell, is what the loop polls (ioloop.Belled): a
// side that is about to sleep arms its ring (it wants a bell), and the
// other side, seeing the arm after it published bytes (or freed room),
// writes one byte to the bell. The bell's end is also the other
// process's end: it is seen at its exit, however it died.
//
// Layout of the region (PipeSize bytes; all words little-endian, each on
// its own 128-byte line so that the two processes never write one line):
//
//	[0, 128)       magic "BOLTPIPE", version, ring size (uint64 at 8, 16)
//	ring r (r = 0: written by side 0, read by side 1; r = 1: the reverse),
//	at base = 128 + r*(pipeCtl+pipeBox+size):
//	  base+0       tail: bytes published by the producer (uint64)
//	  base+128     head: bytes consumed by the consumer (uint64)
//	  base+256     data wanted: the consumer sleeps until a bell (uint32)
//	  base+384     room wanted: the producer sleeps until a bell (uint32)
//	  base+512     box read: box messages consumed by the consumer (uint64)
//	  base+640     the box: boxSlots slots of boxSlot bytes
//	  base+640+pipeBox  size bytes of data; byte i of the stream at i mod size
//
// The box carries short writes (at most boxCap bytes) in a line of their
// own, as OpenMPI's fast boxes do: a slot holds a word (the message's
// number, counting from 1, times 256, plus its length), the ring position
// the message follows (the tail when it was written), and the bytes. The
// consumer watches the next slot's word, so a short message costs one
// line's trip between the cores, where through the ring it costs the
// tail's line and one or two of data. The box is part of the one byte
// stream: a message in it comes after the ring's bytes up to its
// position and before the rest, so the consumer reads the ring only up
// to the position of a message waiting in the box. A producer that finds
// the box full (box read tells it what was consumed, loaded only then)
// writes to the ring.
//
// Memory ordering: a producer copies bytes into the ring and then stores
// tail atomically, and a consumer loads tail atomically before it copies
// them out (release and acquire: the instructions are the same between
// processes as between goroutines); head, likewise, frees room only
// after the bytes are copied out. A side that arms stores its arm word
// and then loads the other side's position again, and the other side
// stores its position and then loads the arm word: of two such pairs,
// each a store that is a full barrier followed by a load, at least one
// sees the other, so no bell is ever lost. The stores are swaps (storeFenced),
// not atomic stores: a locked exchange is a full barrier however the
// program is built, while under the race detector Go's atomic stores to
// memory outside Go's heap are release stores only (a plain move on
// amd64), which a later load may pass; a bell was then lost now and
// again, and a receive waited for bytes that sat in its ring.
//
// The other process is not trusted: a tail or head that claims more than
// the ring holds fails the connection with ioloop.ErrProtocol
// (errCorrupt), and bytes are copied out before they are decoded.
const (
	pipeHeader  = 128
	pipeLine    = 128
	pipeCtl     = 5 * pipeLine
	pipeMagic   = 0x45504950544c4f42 // "BOLTPIPE"
	pipeVersion = 2
	// boxSlots is how many short messages a box holds; boxSlot the bytes
	// of a slot (a line pair: the spatial prefetcher moves lines in
	// pairs); boxCap the bytes of a message in it, after the slot's word
	// and position; pipeBox the bytes of a box.
	boxSlots = 32
	boxSlot  = 2 * 64
	boxCap   = boxSlot - 16
	pipeBox  = boxSlots * boxSlot
	// MinPipeRing is the smallest ring a pipe may have.
	MinPipeRing = 4 << 10
)

// PipeSize returns the bytes of shared memory a pipe whose rings hold
// ring bytes each needs.
func PipeSize(ring int) int { return pipeHeader + 2*(pipeCtl+pipeBox+ring) }

// InitPipe prepares mem, shared memory of PipeSize(ring) bytes, as a
// pipe with rings of ring bytes, a power of two of at least MinPipeRing:
// it writes the header and zeroes the rings' control lines and boxes,
// and leaves the rings' bytes as they are (untouched pages of fresh
// memory stay unallocated until the ring reaches them). Its creator calls
// it before the other side maps it.
func InitPipe(mem []byte, ring int) error {
	if ring < MinPipeRing || ring&(ring-1) != 0 {
		return fmt.Errorf("shm: pipe ring of %d bytes: want a power of two of at least %d", ring, MinPipeRing)
	}
	if len(mem) < PipeSize(ring) {
		return fmt.Errorf("shm: pipe of %d bytes in %d bytes of memory", PipeSize(ring), len(mem))
	}
	// Only the header and each ring's control lines: a ring's bytes are
	// read only up to its tail, once written. Clearing them too touched
	// every page of every pair's memory at once (1.25 MiB per pair with
	// 512 KiB rings), in the creator, whether the pair ever spoke.
	clear(mem[:pipeHeader])
	for r := range 2 {
		base := pipeHeader + r*(pipeCtl+pipeBox+ring)
		clear(mem[base : base+pipeCtl+pipeBox])
	}
	binary.LittleEndian.PutUint64(mem[0:], pipeMagic)
	binary.LittleEndian.PutUint64(mem[8:], pipeVersion)
	binary.LittleEndian.PutUint64(mem[16:], uint64(ring))
	return nil
}

// storeFenced32 and storeFenced64 store v at w with a full barrier:
// nothing after them is done before the store is visible to the other
// process (see "Memory ordering" above).
func storeFenced32(w *uint32, v uint32) { atomic.SwapUint32(w, v) }

func storeFenced64(w *uint64, v uint64) { atomic.SwapUint64(w, v) }

// ring is one direction of a pipe as one side sees it: the words are in
// shared memory, pos and peer are this side's copies.
type ring struct {
	tail, head *uint64 // positions: the producer's and the consumer's
	wantData   *uint32 // the consumer asks for a bell when bytes come
	wantRoom   *uint32 // the producer asks for a bell when room frees
	boxRead    *uint64 // box messages the consumer has consumed
	box        []byte
	data       []byte
	mask       uint64
	pos        uint64      // this side's position (tail if producing, head if consuming)
	peer       uint64      // the other side's position, as last loaded
	stores     storeChoice // producing: how long copies go in (copyIn)
	boxes      uint64      // box messages written (producing) or consumed (consuming)
	boxPeer    uint64      // producing: box read, as last loaded
	boxOff     int         // consuming: bytes of the next box message already consumed
}

// Pipe is both directions of a pipe from one side, and its bell: an
// ioloop.Stream, and an Attacher, Belled, Poller and DeferLimiter.
//
// Lock rule: tx belongs to the Conn's writer (Writev), rx to its reader
// (Read), but for rx.wantData, which StartPolling stores under bmu (and
// armEmpty, which also loads rx's shared words there, and the published
// box read); the words in shared memory are only touched with atomics
// (but a box slot's position, published by its word's fenced store);
// polls, writers, gone, asking, late and seen are atomics; conn is set
// once, by Attach, before anything else.
type Pipe struct {
	tx, rx  ring
	bell    int          // the bell socket: the Conn's descriptor
	release func()       // Open's, or nil
	conn    *ioloop.Conn // the Conn the pipe is registered as (Attach)
	// polls counts in its low 32 bits the goroutines polling the Conn in a
	// loop (Conn.Polling), in its high 32 the times one began to, ever
	// (what the late arm watches): one atomic add for both.
	polls   atomic.Uint64
	writers atomic.Int32 // senders retrying a write themselves (Writing)
	gone    atomic.Bool  // the bell ended: the other side closed or died
	// asking is set before this side stores 1 in rx.wantData, cleared when
	// it stores 0: clear, the word is 0 (only this side sets it), and
	// StartPolling need not look at it.
	asking atomic.Bool

	// The late arm (pipe_late.go): late is whether the timer, which asks
	// for a bell once nobody polled for lateArm, is set; seen the polls
	// begun as it last looked.
	late  atomic.Bool
	seen  atomic.Uint32
	timer *time.Timer

	// bmu orders what touches the bell or the shared memory outside the
	// Conn's reader and writer (the loop draining the bell, StartPolling)
	// with Close, which sets shut under it before it closes the bell and
	// lets the memory go.
	bmu  sync.Mutex
	shut bool
}

var (
	_ ioloop.Stream       = (*Pipe)(nil)
	_ ioloop.Attacher     = (*Pipe)(nil)
	_ ioloop.Belled       = (*Pipe)(nil)
	_ ioloop.Poller       = (*Pipe)(nil)
	_ ioloop.DeferLimiter = (*Pipe)(nil)
)

// Open returns side 0 or 1 of the pipe in mem (InitPipe prepared it; the
// other process is the other side), whose bell is bell, a connected Unix
// stream socket to that process, for ioloop.Loop.RegisterStream. The
// Pipe owns bell from now on, and calls release, if not nil, once
// nothing will touch mem again (Close), also when Open itself fails.
func Open(mem []byte, side, bell int, release func()) (*Pipe, error) {
	p, err := newPipe(mem, side, bell)
	if err == nil {
		err = os.NewSyscallError("fcntl", unix.SetNonblock(bell, true))
	}
	if err != nil {
		unix.Close(bell)
		if release != nil {
			release()
		}
		return nil, err
	}
	p.release = release
	p.timer = time.AfterFunc(time.Hour, p.armLate)
	p.timer.Stop()
	return p, nil
}

func newPipe(mem []byte, side, bell int) (*Pipe, error) {
	if len(mem) < pipeHeader {
		return nil, fmt.Errorf("shm: pipe memory of %d bytes", len(mem))
	}
	size := binary.LittleEndian.Uint64(mem[16:])
	switch {
	case binary.LittleEndian.Uint64(mem[0:]) != pipeMagic:
		return nil, fmt.Errorf("shm: pipe memory without the pipe magic")
	case binary.LittleEndian.Uint64(mem[8:]) != pipeVersion:
		return nil, fmt.Errorf("shm: pipe version %d, want %d", binary.LittleEndian.Uint64(mem[8:]), pipeVersion)
	case size < MinPipeRing || size&(size-1) != 0 || size > uint64(len(mem)) || uint64(len(mem)) < uint64(PipeSize(int(size))):
		return nil, fmt.Errorf("shm: pipe ring of %d bytes in %d bytes of memory", size, len(mem))
	case side != 0 && side != 1:
		return nil, fmt.Errorf("shm: pipe side %d, want 0 or 1", side)
	}
	p := &Pipe{bell: bell}
	p.tx = ringAt(mem, side, int(size))
	p.rx = ringAt(mem, 1-side, int(size))
	p.tx.pos = atomic.LoadUint64(p.tx.tail)
	p.tx.peer = atomic.LoadUint64(p.tx.head)
	p.rx.pos = atomic.LoadUint64(p.rx.head)
	p.tx.boxes = atomic.LoadUint64(p.tx.boxRead)
	p.tx.boxPeer = p.tx.boxes
	p.rx.boxes = atomic.LoadUint64(p.rx.boxRead)
	return p, nil
}

func ringAt(mem []byte, r, size int) ring {
	base := pipeHeader + r*(pipeCtl+pipeBox+size)
	word := func(off int) unsafe.Pointer { return unsafe.Pointer(&mem[base+off]) }
	box, data := base+pipeCtl, base+pipeCtl+pipeBox
	return ring{
		tail:     (*uint64)(word(0)),
		head:     (*uint64)(word(pipeLine)),
		wantData: (*uint32)(word(2 * pipeLine)),
		wantRoom: (*uint32)(word(3 * pipeLine)),
		boxRead:  (*uint64)(word(4 * pipeLine)),
		box:      mem[box:data:data],
		data:     mem[data : data+size : data+size],
		mask:     uint64(size - 1),
	}
}

// Attach implements ioloop.Attacher: c is the Conn the pipe is
// registered as.
func (p *Pipe) Attach(c *ioloop.Conn) { p.conn = c }

// Fd implements ioloop.Stream: the bell.
func (p *Pipe) Fd() int { return p.bell }

// Shutdown implements ioloop.Stream: the bell's end is the other side's
// sign that this side is gone.
func (p *Pipe) Shutdown() { unix.Shutdown(p.bell, unix.SHUT_RDWR) }

// Close implements ioloop.Stream: nothing reads or writes the pipe's
// memory or its bell after it.
func (p *Pipe) Close() error {
	p.bmu.Lock()
	p.shut = true
	p.bmu.Unlock()
	p.timer.Stop()
	err := unix.Close(p.bell)
	if p.release != nil {
		p.release()
	}
	return os.NewSyscallError("close", err)
}

// Writev implements ioloop.Stream: it copies as much of bufs as the ring
// has room for and publishes it; unix.EAGAIN when there is no room (the
// other side will ring once it frees some: the room is asked for first,
// unless a sender retries the write itself, which asks once it stops),
// unix.EPIPE once the other side is gone.
func (p *Pipe) Writev(bufs [][]byte) (int, error) {
	if p.gone.Load() {
		return 0, unix.EPIPE
	}
	t := &p.tx
	if n := t.toBox(bufs); n > 0 {
		p.published()
		return n, nil
	}
	size := uint64(len(t.data))
	free := size - (t.pos - t.peer)
	if free < size/2 {
		t.peer = atomic.LoadUint64(t.head)
		if t.pos-t.peer > size {
			return 0, errCorrupt
		}
		free = size - (t.pos - t.peer)
	}
	if free == 0 && p.writers.Load() > 0 {
		return 0, unix.EAGAIN // a sender retries: it asks for a bell when it stops
	}
	if free == 0 {
		storeFenced32(t.wantRoom, 1)
		t.peer = atomic.LoadUint64(t.head)
		if t.pos-t.peer > size {
			return 0, errCorrupt
		}
		if free = size - (t.pos - t.peer); free == 0 {
			return 0, unix.EAGAIN
		}
	}
	n := uint64(0)
	for _, b := range bufs {
		for len(b) > 0 && n < free {
			at := (t.pos + n) & t.mask
			k := uint64(t.copyIn(t.data[at:], b[:min(uint64(len(b)), free-n)]))
			b = b[k:]
			n += k
		}
		if n == free {
			break
		}
	}
	t.pos += n
	storeFenced64(t.tail, t.pos)
	p.published()
	return int(n), nil
}

// published rings the bell if the consumer asked for one: called after
// bytes were published with a fenced store.
func (p *Pipe) published() {
	if w := p.tx.wantData; atomic.LoadUint32(w) != 0 && atomic.CompareAndSwapUint32(w, 1, 0) {
		p.ring()
	}
}

// slot returns the box slot of box message number i (from 0) and its
// word.
func (t *ring) slot(i uint64) ([]byte, *uint64) {
	at := (i % boxSlots) * boxSlot
	s := t.box[at : at+boxSlot : at+boxSlot]
	return s, (*uint64)(unsafe.Pointer(&s[0]))
}

// toBox copies bufs into the box as one message and publishes it, if
// they are short enough (boxCap bytes at most, and some) and a slot is
// free, and returns the bytes written; 0 if they go through the ring.
func (t *ring) toBox(bufs [][]byte) int {
	n := 0
	for _, b := range bufs {
		if n += len(b); n > boxCap {
			return 0
		}
	}
	if n == 0 {
		return 0
	}
	if t.boxes-t.boxPeer >= boxSlots {
		t.boxPeer = atomic.LoadUint64(t.boxRead)
		if t.boxes-t.boxPeer >= boxSlots { // full, or a count from the future
			return 0
		}
	}
	s, word := t.slot(t.boxes)
	at := 16
	for _, b := range bufs {
		at += copy(s[at:], b)
	}
	*(*uint64)(unsafe.Pointer(&s[8])) = t.pos // the word's fenced store publishes it
	t.boxes++
	storeFenced64(word, t.boxes<<8|uint64(n))
	return n
}

// boxDue reports whether the next box message is in its slot and, if it
// is, its length and the ring position it follows; tail is the ring's
// tail as loaded before, reloaded if the message follows bytes published
// since. A slot word that is neither the next message's nor its slot's
// last one, a length out of range (or short of what was read of the
// message already), or a position the ring has passed or not reached, is
// a corrupt pipe. The length is read once, here: the other process may
// rewrite the word meanwhile.
func (r *ring) boxDue(tail *uint64) (at uint64, n int, ok bool, err error) {
	s, word := r.slot(r.boxes)
	w := atomic.LoadUint64(word)
	switch seq := w >> 8; {
	case seq == r.boxes+1:
	case seq+boxSlots == r.boxes+1, w == 0 && r.boxes < boxSlots:
		return 0, 0, false, nil
	default:
		return 0, 0, false, errCorrupt
	}
	if n = int(w & 0xff); n <= r.boxOff || n > boxCap {
		return 0, 0, false, errCorrupt
	}
	at = atomic.LoadUint64((*uint64)(unsafe.Pointer(&s[8])))
	if at > *tail {
		*tail = atomic.LoadUint64(r.tail)
	}
	if at < r.pos || at > *tail {
		return 0, 0, false, errCorrupt
	}
	return at, n, true, nil
}

// fromBox copies what is left of the next box message, which is due and
// n bytes long (boxDue), into b, up to len(b), and hands its slot back
// once it is all read.
func (r *ring) fromBox(b []byte, n int) int {
	s, _ := r.slot(r.boxes)
	k := copy(b, s[16+r.boxOff:16+n])
	if r.boxOff += k; r.boxOff == n {
		r.boxOff = 0
		r.boxes++
		storeRelease(r.boxRead, r.boxes)
	}
	return k
}

// boxEmpty reports whether no box message waits, as the published box
// read tells (a message partly read counts as waiting).
func (r *ring) boxEmpty() bool {
	i := atomic.LoadUint64(r.boxRead)
	_, word := r.slot(i)
	return atomic.LoadUint64(word)>>8 != i+1
}

// Read implements ioloop.Stream: it copies what the ring holds, up to
// len(b), and frees its room. When the ring is empty it returns
// unix.EAGAIN, having first asked for a bell if arm and no goroutine
// polls the Conn in a loop (then only a bell ends the wait, so the ring
// is looked at once more after asking); or ioloop.ErrEOF once the bell
// ended and nothing is left.
func (p *Pipe) Read(b []byte, arm bool) (int, error) {
	return p.read(b, arm && p.Pollers() == 0)
}

func (p *Pipe) read(b []byte, arm bool) (int, error) {
	r := &p.rx
	size := uint64(len(r.data))
	tail := atomic.LoadUint64(r.tail) // before the box: see boxDue
	due, boxLen, boxed, err := r.boxDue(&tail)
	if tail == r.pos && !boxed {
		gone := p.gone.Load() // before tail: the bell ends after the last byte
		if arm {
			p.asking.Store(true)
			storeFenced32(r.wantData, 1)
		}
		tail = atomic.LoadUint64(r.tail)
		if due, boxLen, boxed, err = r.boxDue(&tail); tail == r.pos && !boxed && err == nil {
			if gone {
				return 0, ioloop.ErrEOF
			}
			return 0, unix.EAGAIN
		}
	}
	switch {
	case err != nil:
		return 0, err
	case boxed && due == r.pos:
		return r.fromBox(b, boxLen), nil
	case boxed:
		tail = due // the ring's bytes before the box message first
	}
	avail := tail - r.pos
	if avail > size {
		return 0, errCorrupt
	}
	n := min(avail, uint64(len(b)))
	at := r.pos & r.mask
	k := copy(b[:n], r.data[at:])
	copy(b[k:n], r.data)
	r.pos += n
	storeFenced64(r.head, r.pos)
	if atomic.LoadUint32(r.wantRoom) != 0 && atomic.CompareAndSwapUint32(r.wantRoom, 1, 0) {
		p.ring()
	}
	return int(n), nil
}

// armEmpty asks for a bell when bytes come, for the last goroutine to
// stop polling, and reports whether the ring was then found empty, with
// everything read from it consumed: nothing is left to read until the
// bell rings. Otherwise (bytes came, the other side is gone, a poller
// came back, or the Conn was released) the caller drains the Conn, which
// arms the ring itself as it finds it empty. Like read's, the arm comes
// before the look at tail, and writev stores tail before it looks at the
// arm, so that no bell is lost.
func (p *Pipe) armEmpty() bool {
	p.bmu.Lock()
	defer p.bmu.Unlock()
	if p.shut || p.Pollers() != 0 || p.gone.Load() {
		return false
	}
	if testHookAsk != nil {
		testHookAsk()
	}
	p.asking.Store(true)
	storeFenced32(p.rx.wantData, 1)
	return atomic.LoadUint64(p.rx.tail) == atomic.LoadUint64(p.rx.head) && p.rx.boxEmpty()
}

// Pollers implements ioloop.Poller.
func (p *Pipe) Pollers() uint32 { return uint32(p.polls.Load()) }

// StartPolling implements ioloop.Poller. A store to the arm word only if
// need be: the writer loads its line after every message, and a store
// takes it from the writer's cache.
func (p *Pipe) StartPolling() {
	p.polls.Add(1<<32 | 1)
	if !p.asking.Load() {
		return // the word is 0 already
	}
	p.bmu.Lock()
	if !p.shut && atomic.LoadUint32(p.rx.wantData) != 0 {
		atomic.StoreUint32(p.rx.wantData, 0)
	}
	p.asking.Store(false)
	p.bmu.Unlock()
}

// StopPolling implements ioloop.Poller: the last poller out asks for a
// bell, and reports what came meanwhile.
func (p *Pipe) StopPolling() (drain bool) { return p.stopPolling() == 0 && !p.armEmpty() }

// Writing implements ioloop.Poller: while a sender retries its write
// itself, a full ring asks for no bell (Writev).
func (p *Pipe) Writing(on bool) (last bool) {
	if on {
		p.writers.Add(1)
		return false
	}
	return p.writers.Add(-1) == 0
}

// ring writes one byte to the bell. A full bell needs no more: a byte is
// waiting to be read already. Any other failure is the bell's end, which
// the loop sees on its own.
func (p *Pipe) ring() {
	if testHookBell != nil {
		testHookBell()
	}
	one := [1]byte{1}
	for {
		_, err := unix.Write(p.bell, one[:])
		if err != unix.EINTR {
			return
		}
	}
}

// testHookBell, when set by a test, runs before every bell; testHookAsk
// as armEmpty asks for one.
var testHookBell, testHookAsk func()

// Rang implements ioloop.Belled: the bell's bytes, or its end, mean look
// at both rings.
func (p *Pipe) Rang() error {
	p.bmu.Lock()
	defer p.bmu.Unlock()
	if p.shut {
		return nil
	}
	return p.drainBell()
}

// drainBell reads the bell's bytes, which only say "look again", and
// notes its end.
func (p *Pipe) drainBell() error {
	var buf [64]byte
	for {
		n, err := unix.Read(p.bell, buf[:])
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			return nil
		case err != nil && err != unix.ECONNRESET:
			p.gone.Store(true)
			return os.NewSyscallError("read", err)
		case n == 0 || err == unix.ECONNRESET:
			p.gone.Store(true)
			return nil
		}
	}
}

// copyIn copies src into dst, a part of the ring, as copy does; a long
// copy (ntMin bytes or more) with non-temporal stores (copyStream) while
// plain ones are measured slow (storeChoice).
func (t *ring) copyIn(dst, src []byte) int {
	n := min(len(dst), len(src))
	if n < ntMin {
		return copy(dst, src)
	}
	if t.stores.streaming() {
		return copyStream(dst, src)
	}
	start := nanotime()
	copy(dst, src)
	t.stores.note(n, nanotime()-start)
	return n
}

// storeChoice chooses how a ring's long copies store their bytes. Each
// line written was last read by the other process, and plain stores
// take it from that core's cache first. Where the two cores are far
// apart, that is slow, and non-temporal stores, which skip the cache,
// are several times faster; where they are near, plain stores are as
// fast and leave the lines in cache for the reader, which non-temporal
// ones send to memory (bench/RESULTS.md, "Figures moved out of code
// comments", storeChoice). So plain copies are timed, and while they run
// below slowRate the copies stream, all but one in ntProbe, which is
// plain and timed again.
type storeChoice struct {
	rate  uint64 // plain copies' bytes per µs, a moving average; 0: none yet
	slow  bool   // rate is below slowRate: stream
	since uint32 // long copies streamed since the last plain one
}

// Tuning of storeChoice.
const (
	// ntMin is the shortest copy that may stream.
	ntMin = 64 << 10
	// slowRate (bytes per µs) is where plain stores count as slow.
	slowRate = 16000
	// ntProbe: one long copy in ntProbe is plain while streaming.
	ntProbe = 64
)

// streaming reports whether the next long copy streams.
func (c *storeChoice) streaming() bool {
	if !c.slow {
		return false
	}
	if c.since++; c.since < ntProbe {
		return true
	}
	c.since = 0
	return false
}

// note records a plain copy of n bytes that took ns nanoseconds.
func (c *storeChoice) note(n int, ns int64) {
	r := uint64(n) * 1000 / uint64(max(ns, 1))
	if c.rate == 0 {
		c.rate = r
	} else {
		c.rate = (c.rate + r) / 2
	}
	c.slow = c.rate < slowRate
}

// DeferLimit implements ioloop.DeferLimiter: the ring must hold the rest
// of a frame without its reader reading, so that a writer never waits
// for a receive to write a frame it sends eagerly; half the ring.
func (p *Pipe) DeferLimit() uint64 { return uint64(len(p.rx.data)) / 2 }

// nanotime is a monotonic clock in nanoseconds.
func nanotime() int64 { return int64(time.Since(epoch)) }

var epoch = time.Now()
