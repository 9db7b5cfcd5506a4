package shm

import (
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/boltmesh/boltmesh/internal/own"
)

// A Mailbox is where two neighbours (ranks on one host whose pair
// shares memory) exchange a small message without a frame, at most
// MailboxMax bytes each way: each side writes its part into one of its
// two slots in memory the pair shares, and reads the other's from there
// (the engine's exchange protocol: engine/owned_mailbox.go), and where each
// side gives the other its barrier signal (engine/barrier_mail.go).
// Recursive doubling's steps, which are such exchanges, then cost one
// cache line's trip each way instead of a frame's way through a pipe.
//
// Layout (after the pair's pipes, page-aligned; memory the dialer created,
// zero at first): one area per side, written by that side only, read by
// the other:
//
//	line 0:      asleep (u32): the side waits, asleep, for the other's part;
//	             barAsleep (u32, at 8): it waits, asleep, for the other's
//	             barrier signal; bar (u64, at 64, a cache line of its
//	             own): the last barrier signal it gave (barrier_mail.go)
//	slot 0, 1:   a 128-byte header line (gen u64, tag u32, length u32,
//	             meta u32, then up to MailboxInline bytes of data) and
//	             MailboxMax bytes of data
//
// A part of at most MailboxInline bytes is in the header's first cache line,
// after the header, so that the reader, which watches gen there, finds it
// without another line's trip; a longer one is in the data after the
// header line.
//
// A slot is a seqlock: its writer makes gen odd, writes the header and
// the data, and makes gen even again; a reader takes a slot whose gen is
// even, newer than the last it took there, and whose tag is the one it
// waits for, copies the data, and takes it only if gen did not change
// meanwhile. A writer uses its slots in turn, so that it rewrites one only
// after the exchange following the one that wrote it was completed, which
// needed the other side's part of it, written after the other side was
// done with the slot. A writer that gave a call up and went on may rewrite
// a slot still being read: the reader sees gen change and goes on
// waiting, until the call's ABANDON (or the peer's loss) ends the wait.
//
// Lock rule: xmu (Lock, Unlock) serializes the exchanges through the
// mailbox (the collective layer makes one at a time); mu is read-held
// while the mailbox's memory is touched, and write-held by Close, which
// unmaps it. Both are leaves but for xmu -> mu.
type Mailbox struct {
	xmu own.Owned // the exchange: Lock waits, Drop only tries (internal/own)

	mu   sync.RWMutex
	mine []byte // this side's area; nil once closed
	peer []byte // the neighbour's area

	wake    chan struct{} // a WAKE came: look at the slots again
	barWake chan struct{} // a barrier's WAKE came: look at bar again
	release func()        // gives the pair's memory back
	ring    func(bool)    // sends the neighbour a WAKE (SetRing)

	// The writer's and the reader's state, under xmu.
	wcount  uint64    // slots written
	wgen    [2]uint64 // each slot's gen as last written
	taken   [2]uint64 // the neighbour's slots' gens last taken
	waiting bool      // mine's asleep is set

	begun atomic.Uint64 // calls begun (dropDue)
}

// mailDropEvery is how many calls' beginnings pass between two looks for
// parts of calls left behind (drop): a tag comes round again only after
// 2^18 calls, and each look reads the neighbour's slots, lines it is
// writing.
const mailDropEvery = 1024

// MailboxMax is the longest part of an exchange a mailbox holds.
const MailboxMax = 4096

const (
	mailLine = 128
	mailSlot = mailLine + MailboxMax
	mailArea = mailLine + 2*mailSlot
	// MailboxSize is the shared memory of a pair's mailbox: both areas.
	MailboxSize = 2 * mailArea
)

// NewMailbox makes the mailbox in mem (MailboxSize bytes) as side (0: the
// dialer); release is called once it is closed.
func NewMailbox(mem []byte, side int, release func()) *Mailbox {
	a, b := mem[:mailArea:mailArea], mem[mailArea:MailboxSize:MailboxSize]
	if side == 1 {
		a, b = b, a
	}
	return &Mailbox{mine: a, peer: b, wake: make(chan struct{}, 1), barWake: make(chan struct{}, 1), release: release}
}

// Lock takes the exchange lock: an exchange (Post, then Watch, Take,
// Ready, Stray and Sleep until its part is in) holds it throughout.
func (m *Mailbox) Lock() { m.xmu.Lock() }

// Unlock releases the exchange lock.
func (m *Mailbox) Unlock() { m.xmu.Release() }

// Wake returns the channel the neighbour's WAKE for a part arrives on
// (Woken): an exchange asleep (Sleep) selects on it, and looks again.
func (m *Mailbox) Wake() <-chan struct{} { return m.wake }

// BarWake returns the channel the neighbour's WAKE for a barrier signal
// arrives on (Woken(true)).
func (m *Mailbox) BarWake() <-chan struct{} { return m.barWake }

// SetRing sets how this side wakes the neighbour asleep on the mailbox
// (a WAKE frame, for a barrier signal or for a part): once, before the
// mailbox is shared.
func (m *Mailbox) SetRing(ring func(barrier bool)) { m.ring = ring }

// Ring wakes the neighbour asleep on the mailbox (Post or Signal said
// so): for a barrier signal, or for a part.
func (m *Mailbox) Ring(barrier bool) {
	if m.ring != nil {
		m.ring(barrier)
	}
}

// Writes returns how many parts this side has written (tests).
func (m *Mailbox) Writes() uint64 {
	m.xmu.Lock()
	defer m.xmu.Release()
	return m.wcount
}

// u64 and u32 view the word at off of an area. Areas are page-aligned,
// and every offset used is a multiple of 8.
func u64(area []byte, off int) *atomic.Uint64 {
	return (*atomic.Uint64)(unsafe.Pointer(&area[off]))
}

func u32(area []byte, off int) *atomic.Uint32 {
	return (*atomic.Uint32)(unsafe.Pointer(&area[off]))
}

// word is a header word for plain access: written between a slot's odd
// and even gen, read between a gen's load and settled.
func word(area []byte, off int) *uint32 { return (*uint32)(unsafe.Pointer(&area[off])) }

// Offsets within an area.
const (
	offAsleep    = 0
	offBarAsleep = 8
	offBar       = 64
	offGen       = 0 // in a slot
	offTag       = 8
	offLen       = 12
	offMeta      = 16
	offInline    = 24
	// MailboxInline is the longest part kept in the header's first
	// cache line (64 bytes), beside the header the reader watches.
	MailboxInline = 64 - offInline
)

// slotData is where a part of n bytes is in slot s (n at most
// MailboxMax).
func slotData(s []byte, n int) []byte {
	if n <= MailboxInline {
		return s[offInline : offInline+n]
	}
	return s[mailLine : mailLine+n]
}

func slotOf(area []byte, i int) []byte { return area[mailLine+i*mailSlot : mailLine+(i+1)*mailSlot] }

// Post writes this side's part of the exchange on tag: p with meta, in
// the slot written longest ago. It reports whether the neighbour is
// asleep waiting for it (then it must be woken). the exchange lock is held; p is at
// most MailboxMax bytes.
func (m *Mailbox) Post(tag, meta uint32, p []byte) (asleep, ok bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.mine == nil {
		return false, false
	}
	i := int(m.wcount & 1)
	m.wcount++
	s := slotOf(m.mine, i)
	g := m.wgen[i] + 1
	markWriting(u64(s, offGen), g) // odd: before any byte of the slot changes
	*word(s, offTag) = tag         // plain stores: the even gen publishes them
	*word(s, offLen) = uint32(len(p))
	*word(s, offMeta) = meta
	copy(slotData(s, len(p)), p)
	u64(s, offGen).Swap(g + 1) // a release, and a full barrier before asleep's load (see Sleep)
	m.wgen[i] = g + 1
	return u32(m.peer, offAsleep).Load() != 0, true
}

// Take looks for the neighbour's part of the exchange on tag and, if it
// is there, copies it into dst. found is false if it is not there yet;
// otherwise n is its length, and meta its meta, and a part longer than
// dst, or than MailboxMax (a neighbour's corrupt header), is not copied:
// dst is left as it was. closed reports a closed mailbox. xmu is held.
func (m *Mailbox) Take(tag uint32, dst []byte) (n int, meta uint32, found, closed bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.takeLocked(tag, dst)
}

// takeLocked is Take with mu read-held.
func (m *Mailbox) takeLocked(tag uint32, dst []byte) (n int, meta uint32, found, closed bool) {
	if m.peer == nil {
		return 0, 0, false, true
	}
	for i := range 2 {
		s := slotOf(m.peer, i)
		g := m.published(s, i, tag)
		if g == 0 {
			continue
		}
		n, meta = int(*word(s, offLen)), *word(s, offMeta)
		if n <= len(dst) && n <= MailboxMax {
			copy(dst, slotData(s, n))
		}
		if !settled(s, g) {
			continue // rewritten meanwhile: not this exchange's any more
		}
		m.taken[i] = g
		return n, meta, true, false
	}
	return 0, 0, false, false
}

// Watch is Take tried up to tries times in a row, under one read lock.
func (m *Mailbox) Watch(tag uint32, dst []byte, tries int) (n int, meta uint32, found, closed bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	for range tries {
		if n, meta, found, closed = m.takeLocked(tag, dst); found || closed {
			break
		}
	}
	return n, meta, found, closed
}

// published returns the gen of the neighbour's slot s (index i) if it
// holds a part for tag not taken yet, or 0.
func (m *Mailbox) published(s []byte, i int, tag uint32) uint64 {
	g := u64(s, offGen).Load()
	if g&1 != 0 || g <= m.taken[i] || *word(s, offTag) != tag {
		return 0
	}
	return g
}

// Ready reports whether the neighbour's part for tag is in the mailbox,
// without taking it. the exchange lock is held.
func (m *Mailbox) Ready(tag uint32) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.peer == nil {
		return false
	}
	return m.published(slotOf(m.peer, 0), 0, tag) != 0 || m.published(slotOf(m.peer, 1), 1, tag) != 0
}

// Stray returns the tag and meta of a part in the mailbox for another
// tag than tag, not taken yet (ok false: none): the neighbour's part of
// another step, or one left by a call given up. the exchange lock is held.
func (m *Mailbox) Stray(tag uint32) (other, meta uint32, ok bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.peer == nil {
		return 0, 0, false
	}
	for i := range 2 {
		s := slotOf(m.peer, i)
		g := u64(s, offGen).Load()
		if g&1 != 0 || g <= m.taken[i] {
			continue
		}
		other, meta = *word(s, offTag), *word(s, offMeta)
		if other != tag && settled(s, g) {
			return other, meta, true
		}
	}
	return 0, 0, false
}

// DropDue reports whether this call's beginning is one at which drop
// looks (every mailDropEvery).
func (m *Mailbox) DropDue() bool { return m.begun.Add(1)%mailDropEvery == 0 }

// Wanter says whether a part for a tag is still wanted (the engine's
// peer, asking the collective tags' owner), without a closure to
// allocate.
type Wanter interface{ WantedMail(tag uint32) bool }

// Drop marks taken the neighbour's parts in the mailbox that w says no
// call wants any more (those of calls this rank left behind,
// which nobody took: a step the neighbour made by mailbox and this rank
// by frames, or a call given up), as the frames of such calls are
// dropped, so that their tags coming round again find nothing. It skips
// a mailbox an exchange is using.
func (m *Mailbox) Drop(w Wanter) {
	if !m.xmu.Acquire() {
		return
	}
	defer m.xmu.Release()
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.peer == nil {
		return
	}
	for i := range 2 {
		s := slotOf(m.peer, i)
		g := u64(s, offGen).Load()
		if g&1 == 0 && g > m.taken[i] && !w.WantedMail(*word(s, offTag)) && settled(s, g) {
			m.taken[i] = g
		}
	}
}

// settled reports whether slot s's gen is still g after its data was
// read.
func settled(s []byte, g uint64) bool {
	loadFence()
	return u64(s, offGen).Load() == g
}

// Sleep marks this side asleep (on) or awake for the neighbour's
// writer. the exchange lock is held.
func (m *Mailbox) Sleep(on bool) {
	if m.waiting == on {
		return
	}
	m.setAsleep(offAsleep, on)
	m.waiting = on
}

// setAsleep stores this side's asleep word at off (asleep or barAsleep).
// Swaps, not stores: this store and the loads after it (ready, take,
// signalled), and the writer's store (post's gen, signal's bar) and its
// load of this word, are a Dekker pair, and only a full barrier between
// each store and its load keeps a WAKE from being lost; under the race
// detector Go's atomic stores to memory outside Go's heap are release
// stores only (see the pipes' "Memory ordering", pipe.go).
func (m *Mailbox) setAsleep(off int, on bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.mine == nil {
		return
	}
	v := uint32(0)
	if on {
		v = 1
	}
	u32(m.mine, off).Swap(v)
}

// Woken is told of the neighbour's WAKE, for the slots or (barrier) for
// bar.
func (m *Mailbox) Woken(barrier bool) {
	ch := m.wake
	if barrier {
		ch = m.barWake
	}
	select {
	case ch <- struct{}{}:
	default:
	}
}

// Signal makes v this side's barrier signal, and reports whether the
// neighbour is asleep waiting for one (then it must be woken); ok is
// false once the mailbox is closed. Signals only grow.
// A swap: a full barrier after the puts before it, and before the load
// of barAsleep (the Dekker pair of SleepBarrier).
func (m *Mailbox) Signal(v uint64) (asleep, ok bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.mine == nil {
		return false, false
	}
	u64(m.mine, offBar).Swap(v)
	return u32(m.peer, offBarAsleep).Load() != 0, true
}

// Signalled returns the neighbour's last barrier signal; ok is false
// once the mailbox is closed.
func (m *Mailbox) Signalled() (v uint64, ok bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.peer == nil {
		return 0, false
	}
	return u64(m.peer, offBar).Load(), true
}

// Given returns this side's last barrier signal (0 once closed).
func (m *Mailbox) Given() uint64 {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.mine == nil {
		return 0
	}
	return u64(m.mine, offBar).Load()
}

// Reached reports whether the neighbour's barrier signal is v or later.
func (m *Mailbox) Reached(v uint64) bool {
	got, ok := m.Signalled()
	return ok && got >= v
}

// SleepBarrier marks this side asleep (on) or awake for the neighbour's
// barrier signal. Calls are serialized by the transport's barrier lock.
func (m *Mailbox) SleepBarrier(on bool) { m.setAsleep(offBarAsleep, on) }

// Close unmaps the mailbox once no exchange touches it.
func (m *Mailbox) Close() {
	m.mu.Lock()
	open := m.mine != nil
	m.mine, m.peer = nil, nil
	m.mu.Unlock()
	if open {
		m.release()
	}
}
