package shm

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"
	"unsafe"

	"github.com/boltmesh/boltmesh/heap"
	osshm "github.com/boltmesh/boltmesh/internal/shm"
	"golang.org/x/sys/unix"
)

// The neighbours' meeting (frame/spec.md, "Neighbours"). Two ranks of one
// host whose control stream's handshake chose shared memory meet over a
// Unix socket: the acceptor of the pair (the lower rank) listens
// (ListenMeetings) and expects the meeting its handshake announced
// (Expect, by the handshake's token); the dialer (Meet) creates the
// pipes' memory, sealed, and both pipes' bells, and sends them with its
// heap; the acceptor checks and maps them and answers with its heap.
// Each side also learns whether it may copy from the other's memory
// (single copy): each sends its probe, a word at a fixed place in its
// memory, and reads the other's (Probe); the acceptor's answer says
// whether it read the dialer's right, and the dialer's last word whether
// it read the acceptor's. What the pair shares, as one side holds it, is
// a Pair.
//
// Lock rule: Meetings.mu guards offers and each offer's pair and
// dropped; Pair.mu its refs; both are leaves.

// MeetConfig is what one rank brings to its meetings.
type MeetConfig struct {
	Rank     int           // this rank, named in the meetings it dials
	HeapFD   int           // this rank's heap, which its neighbours map; it stays the caller's
	HeapSize uint64        // the heap's size
	Ring     int           // the data ring of the pairs this rank creates (as the dialer); the control ring is CtlRing(Ring)
	Timeout  time.Duration // a meeting's deadline
	Probe    *Probe        // this rank's probe (NewProbe), or nil: it copies from nobody, and nobody from it
}

// Sizes of the meeting's messages (see Meet and serveMeeting).
const (
	meetAsk   = 32 + 4 + 8*4 + probeSize // token, rank, ring, control ring, heap size, memory size, probe
	meetReply = 1 + 8 + probeSize + 1    // accepted, heap size, probe, whether the dialer's probe read right
	meetFDs   = 4                        // pipes' memory, data bell, control bell, heap
)

// acceptBackoffMin and acceptBackoffMax bound the waits between failed
// accepts of the meeting point (descriptors exhausted, say).
const (
	acceptBackoffMin = 5 * time.Millisecond
	acceptBackoffMax = time.Second
)

// CtlRing is the ring of a pair's control pipe for a data ring of ring
// bytes: a quarter, at least 64 KiB.
func CtlRing(ring int) int { return max(ring/4, 64<<10) }

// Meetings is an acceptor's meeting point: where higher ranks of its host
// meet it.
type Meetings struct {
	cfg    MeetConfig
	failed func(rank int, err error) // a meeting that failed: the pair stays on TCP
	ln     *osshm.Listener
	wg     sync.WaitGroup // the listener's goroutines
	shut   sync.Once

	mu     sync.Mutex
	offers map[[32]byte]*Offer // meetings expected, by token
}

// Offer is one meeting the acceptor expects, announced in its handshake:
// the dialer's rank, and what the meeting gave once done is closed.
type Offer struct {
	rank    int
	done    chan struct{}
	pair    *Pair // the meeting's outcome, or nil if it failed
	dropped bool  // the handshake gave the offer up: the meeting releases what it got
}

// ListenMeetings opens a meeting point and serves it until Close; failed,
// if not nil, hears of each meeting that failed on this side.
func ListenMeetings(cfg MeetConfig, failed func(rank int, err error)) (*Meetings, error) {
	ln, err := osshm.Listen()
	if err != nil {
		return nil, err
	}
	n := &Meetings{cfg: cfg, failed: failed, ln: ln, offers: make(map[[32]byte]*Offer)}
	n.wg.Go(n.accept)
	return n, nil
}

// Addr is where the dialers meet this rank.
func (n *Meetings) Addr() string { return n.ln.Addr() }

// Close stops meeting: the listener closes and every meeting not taken is
// released.
func (n *Meetings) Close() {
	n.shut.Do(func() { n.ln.Close() })
	n.wg.Wait()
	n.mu.Lock()
	defer n.mu.Unlock()
	clear(n.offers) // never met: nothing to release
}

// accept serves the meeting point until it closes. Other Accept errors
// are retried with backoff; the dialers waiting meanwhile fall back to
// TCP when their handshake's time is up.
func (n *Meetings) accept() {
	var delay time.Duration
	for {
		uc, err := n.ln.Accept()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			delay = min(max(2*delay, acceptBackoffMin), acceptBackoffMax)
			time.Sleep(delay)
			continue
		}
		delay = 0
		n.wg.Go(func() {
			defer uc.Close()
			n.serveMeeting(uc)
		})
	}
}

// Expect registers the meeting of the handshake whose token is token,
// with the dialer rank.
func (n *Meetings) Expect(token [32]byte, rank int) *Offer {
	o := &Offer{rank: rank, done: make(chan struct{})}
	n.mu.Lock()
	n.offers[token] = o
	n.mu.Unlock()
	return o
}

// Await waits, at most within, for offer o's meeting, which the dialer
// said it made, and returns what it gave, or nil.
func (n *Meetings) Await(o *Offer, within time.Duration) *Pair {
	timer := time.NewTimer(within)
	select {
	case <-o.done:
	case <-timer.C:
	}
	timer.Stop()
	n.mu.Lock()
	defer n.mu.Unlock()
	select {
	case <-o.done:
		p := o.pair
		o.pair = nil
		return p
	default:
		return nil
	}
}

// Cancel drops offer o, if any: its meeting, if it took place or takes
// place later, is released.
func (n *Meetings) Cancel(o *Offer) {
	if o == nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	for k, v := range n.offers {
		if v == o {
			delete(n.offers, k)
		}
	}
	o.dropped = true
	select {
	case <-o.done:
		if o.pair != nil {
			o.pair.Release()
			o.pair = nil
		}
	default:
	}
}

// take removes the offer of token tok, if there is one.
func (n *Meetings) take(tok []byte) *Offer {
	var k [32]byte
	copy(k[:], tok)
	n.mu.Lock()
	defer n.mu.Unlock()
	o := n.offers[k]
	delete(n.offers, k)
	return o
}

// serveMeeting is the acceptor's side of one meeting: the dialer's
// token, pipes and heap checked and mapped, its own heap sent back.
func (n *Meetings) serveMeeting(uc *net.UnixConn) {
	uc.SetDeadline(time.Now().Add(n.cfg.Timeout))
	var ask [meetAsk]byte
	k, fds, err := osshm.RecvFDs(uc, ask[:], meetFDs)
	if err != nil {
		return
	}
	o := n.take(ask[:32])
	if o == nil {
		closeFDs(fds) // not a meeting of a handshake this rank made: a stranger
		return
	}
	pair, err := n.admit(uc, o.rank, ask[:k], fds)
	if err == nil {
		var reply [meetReply]byte
		reply[0] = 1
		binary.LittleEndian.PutUint64(reply[1:], n.cfg.HeapSize)
		n.cfg.Probe.put(reply[9:])
		if pair.Copy.In {
			reply[9+probeSize] = 1
		}
		if err = osshm.SendFDs(uc, reply[:], n.cfg.HeapFD); err != nil {
			pair.Release()
			pair = nil
		} else {
			pair.Copy.Out = pair.Copy.Out && heardCopy(uc)
		}
	} else {
		if n.failed != nil {
			n.failed(o.rank, err)
		}
		osshm.SendFDs(uc, []byte{0})
	}
	n.mu.Lock()
	if o.dropped && pair != nil {
		pair.Release()
		pair = nil
	}
	o.pair = pair
	close(o.done)
	n.mu.Unlock()
}

// admit checks what the dialer of rank sent (ask, with fds, which it
// owns from now on) and maps it.
func (n *Meetings) admit(uc *net.UnixConn, rank int, ask []byte, fds []int) (*Pair, error) {
	if len(ask) != meetAsk || len(fds) != meetFDs {
		closeFDs(fds)
		return nil, fmt.Errorf("%w: %d bytes and %d descriptors", ErrMeeting, len(ask), len(fds))
	}
	defer closeFDs([]int{fds[0]}) // mapped or refused: the mapping keeps the memory
	if got := int(binary.LittleEndian.Uint32(ask[32:])); got != rank {
		closeFDs(fds[1:])
		return nil, fmt.Errorf("%w: as rank %d for the handshake of rank %d", ErrMeeting, got, rank)
	}
	uid, pid, err := osshm.PeerCred(uc)
	if err != nil || uid != os.Getuid() {
		closeFDs(fds[1:])
		return nil, fmt.Errorf("the neighbour runs as user %d, this rank as %d (%v)", uid, os.Getuid(), err)
	}
	ring := int(binary.LittleEndian.Uint64(ask[36:]))
	ctl := int(binary.LittleEndian.Uint64(ask[44:]))
	heapSize := binary.LittleEndian.Uint64(ask[52:])
	size := int(binary.LittleEndian.Uint64(ask[60:]))
	if ring < MinPipeRing || ctl < MinPipeRing || ring > 1<<30 || ctl > 1<<30 || size != pipesSize(ring, ctl) {
		closeFDs(fds[1:])
		return nil, fmt.Errorf("%w: pipes of %d and %d bytes in %d bytes", ErrMeeting, ring, ctl, size)
	}
	pair, err := mapPair(fds[0], size, 1, ring, ctl)
	if err != nil {
		closeFDs(fds[1:])
		return nil, err
	}
	pair.bells = [2]int{fds[1], fds[2]}
	if pair.Heap, err = heap.Map(fds[3], heapSize); err != nil {
		pair.Release()
		return nil, err
	}
	// The dialer copies from this rank if it offered a probe (it takes
	// part) and then says it read this rank's right (heardCopy).
	probe := ask[68:]
	pair.Copy = PairCopy{Pid: pid, In: n.cfg.Probe.read(rank, pid, probe), Out: offered(probe) && n.cfg.Probe.On()}
	return pair, nil
}

// Meet is the dialer's side: it meets rank at addr with the token of
// their control stream's handshake, and returns what they share.
func Meet(cfg MeetConfig, rank int, addr string, token []byte) (*Pair, error) {
	ctx, cancel := context.WithTimeout(context.Background(), cfg.Timeout)
	defer cancel()
	uc, err := osshm.Dial(ctx, addr)
	if err != nil {
		return nil, err
	}
	defer uc.Close()
	uc.SetDeadline(time.Now().Add(cfg.Timeout))
	uid, pid, err := osshm.PeerCred(uc)
	if err != nil || uid != os.Getuid() {
		return nil, fmt.Errorf("the neighbour runs as user %d, this rank as %d (%v)", uid, os.Getuid(), err)
	}
	ring, ctl := cfg.Ring, CtlRing(cfg.Ring)
	size := pipesSize(ring, ctl)
	fd, err := osshm.Create("boltmesh-pipes", size)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd) // sent or failed: the mapping keeps the memory
	pair, err := mapPair(fd, size, 0, ring, ctl)
	if err != nil {
		return nil, err
	}
	if err := pair.init(); err != nil {
		pair.Release()
		return nil, err
	}
	theirs, err := pair.makeBells()
	if err != nil {
		pair.Release()
		return nil, err
	}
	defer closeFDs(theirs[:])
	var ask [meetAsk]byte
	copy(ask[:], token)
	binary.LittleEndian.PutUint32(ask[32:], uint32(cfg.Rank))
	binary.LittleEndian.PutUint64(ask[36:], uint64(ring))
	binary.LittleEndian.PutUint64(ask[44:], uint64(ctl))
	binary.LittleEndian.PutUint64(ask[52:], cfg.HeapSize)
	binary.LittleEndian.PutUint64(ask[60:], uint64(size))
	cfg.Probe.put(ask[68:])
	if err := osshm.SendFDs(uc, ask[:], fd, theirs[0], theirs[1], cfg.HeapFD); err != nil {
		pair.Release()
		return nil, err
	}
	var reply [meetReply]byte
	k, fds, err := osshm.RecvFDs(uc, reply[:], 1)
	if err == nil && (k != meetReply || reply[0] != 1 || len(fds) != 1) {
		closeFDs(fds)
		err = errors.New("the neighbour refused the meeting")
	}
	if err == nil {
		pair.Heap, err = heap.Map(fds[0], binary.LittleEndian.Uint64(reply[1:]))
	}
	if err != nil {
		pair.Release()
		return nil, err
	}
	pair.Copy = PairCopy{Pid: pid, In: cfg.Probe.read(rank, pid, reply[9:]), Out: reply[9+probeSize] == 1 && cfg.Probe.On()}
	said := []byte{0} // the meeting's last word: whether this rank copies from the acceptor
	if pair.Copy.In {
		said[0] = 1
	}
	if _, err := uc.Write(said); err != nil {
		pair.Copy.In = false // the acceptor will not send by single copy: no matter
	}
	return pair, nil
}

// Pair is what two neighbours share, as one side holds it: the memory of
// both pipes (the data pipe's at 0, the control pipe's after, then the
// mailbox), this side's ends of their bells, the neighbour's heap,
// mapped here, and whether each may copy from the other. The pipes'
// memory is unmapped once both pipes and the mailbox released it (or at
// once, by Release, if they were never opened).
type Pair struct {
	Heap *heap.Remote // the neighbour's heap, mapped here: its owner is who takes it
	Copy PairCopy     // the single copy between the two, as the meeting found it

	mem     []byte
	side    int    // 0 for the dialer (the pipes' creator), 1 for the acceptor
	bells   [2]int // data pipe, control pipe; owned by the pipes once opened
	ring    int    // the data pipe's ring
	ctlRing int    // the control pipe's ring
	mu      sync.Mutex
	refs    int // pipes and mailbox opened and not yet released
}

// PairCopy is a pair's single copy as its meeting found it: the
// neighbour's process (its credentials on the meeting's socket), whether
// this rank copies the neighbour's messages (In), and whether the
// neighbour may copy this rank's (Out).
type PairCopy struct {
	Pid     int
	In, Out bool
}

// Side is 0 for the dialer's side of the pair (the pipes' creator), 1
// for the acceptor's: Open's side.
func (m *Pair) Side() int { return m.side }

// DataPipe returns the data pipe's memory, this side's bell and the
// release that counts the pipe's reference, for Open (which owns the
// bell from then on).
func (m *Pair) DataPipe() (mem []byte, bell int, release func()) {
	return m.pipe(m.mem[:PipeSize(m.ring)], &m.bells[0])
}

// CtlPipe is DataPipe for the control pipe.
func (m *Pair) CtlPipe() (mem []byte, bell int, release func()) {
	return m.pipe(m.mem[PipeSize(m.ring):], &m.bells[1])
}

func (m *Pair) pipe(mem []byte, bell *int) ([]byte, int, func()) {
	m.mu.Lock()
	m.refs++
	fd := *bell
	*bell = -1
	m.mu.Unlock()
	return mem, fd, m.unref
}

// MappedHeap takes the neighbour's heap over (Heap is nil after) as a
// MappedHeap, or returns nil if there is none.
func (m *Pair) MappedHeap() *MappedHeap {
	if m.Heap == nil {
		return nil
	}
	h := &MappedHeap{r: m.Heap}
	m.Heap = nil
	return h
}

// MappedHeap is a neighbour's heap, mapped here: copies into and out of
// it (CopyAt) run under a read lock, which Close takes to unmap it.
type MappedHeap struct {
	mu sync.RWMutex
	r  *heap.Remote // nil once closed
}

// CopyAt copies buf into the heap at off (put) or the heap at off into
// buf; heap.ErrClosed once Close ran, a *heap.RangeError for a range
// outside the heap.
func (m *MappedHeap) CopyAt(off uint64, buf []byte, put bool) error {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.r == nil {
		return heap.ErrClosed
	}
	s, err := m.r.Slice(off, uint64(len(buf)))
	switch {
	case err != nil:
	case put:
		copy(s, buf)
	default:
		copy(buf, s)
	}
	return err
}

// Close unmaps the heap once no copy is under way.
func (m *MappedHeap) Close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.r != nil {
		m.r.Close()
		m.r = nil
	}
}

// CloseBells closes this side's bells that no pipe took (DataPipe,
// CtlPipe): for a side whose pipes failed to open, or to register.
func (m *Pair) CloseBells() {
	m.mu.Lock()
	defer m.mu.Unlock()
	closeFDs(m.bells[:])
	m.bells = [2]int{-1, -1}
}

// Mailbox makes the pair's mailbox, which holds a reference to the memory
// until it is closed.
func (m *Pair) Mailbox() *Mailbox {
	m.mu.Lock()
	m.refs++
	m.mu.Unlock()
	at := mailboxAt(m.ring, m.ctlRing)
	return NewMailbox(m.mem[at:at+MailboxSize], m.side, m.unref)
}

// unref is a pipe's or the mailbox's release: the memory is unmapped
// after the last.
func (m *Pair) unref() {
	m.mu.Lock()
	m.refs--
	last := m.refs == 0
	m.mu.Unlock()
	if last {
		osshm.Unmap(m.mem)
	}
}

// Release gives back a pair whose pipes were never opened: bells, memory
// and the neighbour's heap.
func (m *Pair) Release() {
	closeFDs(m.bells[:])
	m.bells = [2]int{-1, -1}
	osshm.Unmap(m.mem)
	if m.Heap != nil {
		m.Heap.Close()
	}
}

// pipesSize is the shared memory of a pair's two pipes and, from
// mailboxAt(ring, ctl), its mailbox.
func pipesSize(ring, ctl int) int {
	return roundPage(mailboxAt(ring, ctl) + MailboxSize)
}

// mailboxAt is where a pair's mailbox starts in its shared memory: on the
// first page after the pipes.
func mailboxAt(ring, ctl int) int { return roundPage(PipeSize(ring) + PipeSize(ctl)) }

func roundPage(n int) int {
	page := unix.Getpagesize()
	return (n + page - 1) / page * page
}

// mapPair maps the pipes' memory fd (size bytes, checked for seals and
// size) as side; the caller still owns fd.
func mapPair(fd, size, side, ring, ctl int) (*Pair, error) {
	if err := osshm.Check(fd, size); err != nil {
		return nil, err
	}
	mem, err := osshm.Map(fd, size)
	if err != nil {
		return nil, err
	}
	return &Pair{mem: mem, side: side, bells: [2]int{-1, -1}, ring: ring, ctlRing: ctl}, nil
}

// init lays both pipes out in fresh memory (the creator).
func (m *Pair) init() error {
	if err := InitPipe(m.mem, m.ring); err != nil {
		return err
	}
	return InitPipe(m.mem[PipeSize(m.ring):], m.ctlRing)
}

// makeBells makes both pipes' bells, keeping this side's ends, and
// returns the other side's (the caller closes them once sent).
func (m *Pair) makeBells() ([2]int, error) {
	var theirs [2]int
	for i := range m.bells {
		a, b, err := osshm.Socketpair()
		if err != nil {
			closeFDs(theirs[:i])
			return theirs, err
		}
		m.bells[i], theirs[i] = a, b
	}
	return theirs, nil
}

// closeFDs closes every fd in fds that is not -1.
func closeFDs(fds []int) {
	for _, fd := range fds {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
}

// probeSize is the bytes of a probe in a meeting's message: its address
// and its value, or zeros from a rank that takes no part.
const probeSize = 16

// Probe is a rank's single-copy probe: a word at a fixed place in its
// memory for the whole life of the rank's meetings, which a neighbour
// reads (ReadPeer) to learn that it may copy from this rank. A nil Probe
// takes no part.
type Probe struct {
	word    *uint64
	refused func(rank int, err error) // the kernel refused a copy from a neighbour
}

// NewProbe makes this rank's probe, or returns nil where it takes no
// part: min (the shortest message sent by single copy) not positive, or
// no single copy on this system. refused, if not nil, hears of each
// neighbour from which the kernel refuses this rank a copy.
func NewProbe(min int, refused func(rank int, err error)) *Probe {
	if min <= 0 || SingleCopy == "" {
		return nil
	}
	var b [8]byte
	rand.Read(b[:])
	c := &Probe{word: new(uint64), refused: refused}
	*c.word = binary.LittleEndian.Uint64(b[:]) | 1 // never 0: 0 is no probe
	return c
}

// On reports whether this rank takes part.
func (c *Probe) On() bool { return c != nil }

// put writes the probe's address and value into dst, or zeros.
func (c *Probe) put(dst []byte) {
	clear(dst[:probeSize])
	if c != nil {
		binary.LittleEndian.PutUint64(dst, uint64(uintptr(unsafe.Pointer(c.word))))
		binary.LittleEndian.PutUint64(dst[8:], *c.word)
	}
}

// offered reports whether a neighbour's probe is one: it takes part.
func offered(probe []byte) bool { return binary.LittleEndian.Uint64(probe) != 0 }

// read reports whether this rank may copy from the neighbour of rank,
// process pid, whose probe is probe: it reads the word there and
// compares.
func (c *Probe) read(rank, pid int, probe []byte) bool {
	if c == nil || !offered(probe) {
		return false
	}
	var got [8]byte
	if err := ReadPeer(pid, binary.LittleEndian.Uint64(probe), got[:]); err != nil {
		if c.refused != nil {
			c.refused(rank, err)
		}
		return false
	}
	return got == [8]byte(probe[8:16])
}

// heardCopy reads the meeting's last word, the dialer's: whether it
// copies from this rank (it read this rank's probe right). Anything else,
// or nothing before the meeting's deadline, is no.
func heardCopy(uc *net.UnixConn) bool {
	var b [1]byte
	k, err := io.ReadFull(uc, b[:])
	return err == nil && k == 1 && b[0] == 1
}
