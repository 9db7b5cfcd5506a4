package engine

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/boltmesh/boltmesh/frame"
	"github.com/boltmesh/boltmesh/heap"
	linkshm "github.com/boltmesh/boltmesh/internal/link/shm"
	"github.com/boltmesh/boltmesh/internal/shm"
	"golang.org/x/sys/unix"
)

// Neighbours: ranks on one host (their HELLOs carry the same HostID) meet
// over a Unix socket at the end of their control stream's handshake and
// from then on move their frames through two pipes in shared memory
// (linkshm.Open, ioloop.Loop.RegisterStream), one per lane, while each maps the other's heap
// for Put and Get (frame/spec.md, "Neighbours"). The acceptor of the pair
// (the lower rank) listens; the dialer creates the pipes' memory, sealed,
// and the bells, and sends them with its heap; the acceptor answers with
// its heap. A pair that cannot meet (no listener, a refused descriptor,
// another user) stays on TCP, and says why once in the log.
//
// Lock rule: mu guards offers; the rest is set before the mesh forms.
type neighbours struct {
	t     *NetTransport
	host  [frame.HostIDSize]byte // this rank's host, as its HELLOs say; zero: no neighbours
	ln    *shm.Listener          // where higher ranks on this host meet this one; nil if none
	wg    sync.WaitGroup         // the listener's goroutines
	warn  sync.Once              // the first fallback to TCP is logged
	probe copyProbe              // what neighbours read to learn that they may copy from this rank
	shut  sync.Once              // close's

	mu     sync.Mutex
	offers map[[32]byte]*offer // meetings expected, by token
}

// offer is one meeting the acceptor expects, announced in its NEIGHBOUR:
// the dialer's rank, and what the meeting gave once done is closed.
// neighbours.mu guards pair and dropped.
type offer struct {
	rank    int
	done    chan struct{}
	pair    *pairMem // the meeting's outcome, or nil if it failed
	dropped bool     // the handshake gave the offer up: the meeting releases what it got
}

// pairMem is what two neighbours share, as this side holds it: the
// memory of both pipes (the data lane's at 0, the control lane's after,
// then the mailbox),
// this side's ends of their bells, and the neighbour's heap, mapped here.
// The pipes' memory is unmapped once both pipes released it (or at once,
// if they were never registered).
type pairMem struct {
	mem     []byte
	side    int    // 0 for the dialer (the pipes' creator), 1 for the acceptor
	bells   [2]int // data lane, control lane; owned by the pipes once registered
	ring    int    // the data pipe's ring
	ctlRing int    // the control pipe's ring
	heap    *heap.Remote
	copy    pairCopy // the single copy between the two, as the meeting found it
	mu      sync.Mutex
	refs    int // pipes registered and not yet released
}

// Sizes of the meeting's messages (see meet and serveMeeting).
const (
	meetAsk   = 32 + 4 + 8*4 + probeSize // token, rank, ring, control ring, heap size, memory size, probe
	meetReply = 1 + 8 + probeSize + 1    // accepted, heap size, probe, whether the dialer's probe read right
	meetFDs   = 4                        // pipes' memory, data bell, control bell, heap
)

// PipeRingBudget is the shared memory, in bytes of data rings, that
// DefaultPipeRing lets one rank's pipes to its possible neighbours take
// in one direction: 16 MiB (about 40 MiB with both directions and the
// control rings).
const PipeRingBudget = 16 << 20

// DefaultPipeRing is a pair's data ring (Options.PipeRing left 0) in a
// world of world ranks: PipeRingBudget over the world's other ranks,
// any of which may be a neighbour, rounded down to a power of two and
// kept within [64 KiB, 1 MiB]: 1 MiB up to 17 ranks, 512 KiB up to 33,
// 256 KiB up to 65, 128 KiB up to 129, then 64 KiB. Every pair of a host
// has two rings, so their memory grows with the square of the host's
// ranks: 32 ranks on one host take 1.2 GiB with 1 MiB rings, 620 MiB
// with 512 KiB. Smaller rings cost a pair bandwidth (bench/RESULTS.md),
// so worlds of up to 17 keep 1 MiB.
func DefaultPipeRing(world int) int {
	ring := 1 << 20
	for ring > 64<<10 && ring*(world-1) > PipeRingBudget {
		ring /= 2
	}
	return ring
}

// ctlRing is the ring of a pair's control pipe for a data ring of ring
// bytes: a quarter, at least linkshm.MinPipeRing.
func ctlRing(ring int) int { return max(ring/4, 64<<10) }

// labelNeighbour is the HMAC label of a meeting's token.
const labelNeighbour = "boltmesh neighbour"

// newNeighbours finds this rank's host and, if it accepts higher ranks,
// opens its meeting point. With Options.SharedMemory off, in a star, or
// where the host cannot be told, it has no host: every pair stays on TCP.
func newNeighbours(t *NetTransport, star bool) *neighbours {
	n := &neighbours{t: t, offers: make(map[[32]byte]*offer)}
	if t.opts.SharedMemory != SharedMemoryAuto || star || t.world < 2 {
		return n
	}
	n.probe.init(t.opts.SingleCopyMin)
	host, err := shm.HostID(t.opts.HostID)
	if err != nil {
		n.fallBack(-1, fmt.Errorf("this host's identity: %w", err))
		return n
	}
	n.host = host
	if t.rank < t.world-1 {
		if n.ln, err = shm.Listen(); err != nil {
			n.fallBack(-1, fmt.Errorf("listening for neighbours: %w", err))
			return n
		}
		n.wg.Go(n.accept)
	}
	return n
}

// fallBack logs, once per transport, that a pair on one host stays on TCP.
func (n *neighbours) fallBack(rank int, why error) {
	n.warn.Do(func() {
		n.t.opts.Logger.Warn("boltmesh: ranks on one host stay on TCP (logged once)", "rank", n.t.rank, "peer", rank, "err", why)
	})
}

// close stops meeting: the listener closes and every meeting not taken
// is released. It runs when the mesh has formed, and at Close.
func (n *neighbours) close() {
	n.shut.Do(func() {
		if n.ln != nil {
			n.ln.Close()
		}
	})
	n.wg.Wait()
	n.mu.Lock()
	defer n.mu.Unlock()
	for tok := range n.offers {
		delete(n.offers, tok) // never met: nothing to release
	}
}

// accept serves the meeting point until it closes. Other Accept errors
// (descriptors exhausted, say) are retried with backoff, as the TCP
// acceptor does; the dialers waiting meanwhile fall back to TCP when
// their handshake's time is up.
func (n *neighbours) accept() {
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

// expect registers the meeting of the handshake hc, whose dialer is rank.
func (n *neighbours) expect(hc *hsConn, rank int) *offer {
	o := &offer{rank: rank, done: make(chan struct{})}
	var tok [32]byte
	copy(tok[:], hc.mac(labelNeighbour, hc.peer[:], hc.raw[:]))
	n.mu.Lock()
	n.offers[tok] = o
	n.mu.Unlock()
	return o
}

// take removes the offer of token tok, if there is one.
func (n *neighbours) take(tok []byte) *offer {
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
func (n *neighbours) serveMeeting(uc *net.UnixConn) {
	uc.SetDeadline(time.Now().Add(n.t.opts.HandshakeTimeout))
	var ask [meetAsk]byte
	k, fds, err := shm.RecvFDs(uc, ask[:], meetFDs)
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
		binary.LittleEndian.PutUint64(reply[1:], n.t.heap.Size())
		n.probe.put(reply[9:])
		if pair.copy.in {
			reply[9+probeSize] = 1
		}
		if err = shm.SendFDs(uc, reply[:], n.t.heap.FD()); err != nil {
			pair.release()
			pair = nil
		} else {
			pair.copy.out = pair.copy.out && n.heardCopy(uc)
		}
	} else {
		n.fallBack(o.rank, err)
		shm.SendFDs(uc, []byte{0})
	}
	n.mu.Lock()
	if o.dropped && pair != nil {
		pair.release()
		pair = nil
	}
	o.pair = pair
	close(o.done)
	n.mu.Unlock()
}

// admit checks what the dialer of rank sent (ask, with fds, which it
// owns from now on) and maps it.
func (n *neighbours) admit(uc *net.UnixConn, rank int, ask []byte, fds []int) (*pairMem, error) {
	if len(ask) != meetAsk || len(fds) != meetFDs {
		closeFDs(fds)
		return nil, fmt.Errorf("%w: meeting of %d bytes and %d descriptors", ErrProtocol, len(ask), len(fds))
	}
	defer closeFDs([]int{fds[0]}) // mapped or refused: the mapping keeps the memory
	if got := int(binary.LittleEndian.Uint32(ask[32:])); got != rank {
		closeFDs(fds[1:])
		return nil, fmt.Errorf("%w: meeting as rank %d for the handshake of rank %d", ErrProtocol, got, rank)
	}
	uid, pid, err := shm.PeerCred(uc)
	if err != nil || uid != os.Getuid() {
		closeFDs(fds[1:])
		return nil, fmt.Errorf("the neighbour runs as user %d, this rank as %d (%v)", uid, os.Getuid(), err)
	}
	ring := int(binary.LittleEndian.Uint64(ask[36:]))
	ctl := int(binary.LittleEndian.Uint64(ask[44:]))
	heapSize := binary.LittleEndian.Uint64(ask[52:])
	size := int(binary.LittleEndian.Uint64(ask[60:]))
	if ring < linkshm.MinPipeRing || ctl < linkshm.MinPipeRing || ring > 1<<30 || ctl > 1<<30 || size != pipesSize(ring, ctl) {
		closeFDs(fds[1:])
		return nil, fmt.Errorf("%w: pipes of %d and %d bytes in %d bytes", ErrProtocol, ring, ctl, size)
	}
	pair, err := mapPair(fds[0], size, 1, ring, ctl)
	if err != nil {
		closeFDs(fds[1:])
		return nil, err
	}
	pair.bells = [2]int{fds[1], fds[2]}
	if pair.heap, err = heap.Map(fds[3], heapSize); err != nil {
		pair.release()
		return nil, err
	}
	// The dialer copies from this rank if it offered a probe (it takes
	// part) and then says it read this rank's right (heardCopy).
	probe := ask[68:]
	pair.copy = pairCopy{pid: pid, in: n.readProbe(rank, pid, probe), out: offered(probe) && n.probe.on()}
	return pair, nil
}

// meet is the dialer's side: it meets rank at addr with the token of
// their control stream's handshake, and returns what they share.
func (n *neighbours) meet(rank int, addr string, token []byte) (*pairMem, error) {
	o := &n.t.opts
	ctx, cancel := context.WithTimeout(context.Background(), o.HandshakeTimeout)
	defer cancel()
	uc, err := shm.Dial(ctx, addr)
	if err != nil {
		return nil, err
	}
	defer uc.Close()
	uc.SetDeadline(time.Now().Add(o.HandshakeTimeout))
	uid, pid, err := shm.PeerCred(uc)
	if err != nil || uid != os.Getuid() {
		return nil, fmt.Errorf("the neighbour runs as user %d, this rank as %d (%v)", uid, os.Getuid(), err)
	}
	ring := o.PipeRing
	if ring == 0 {
		ring = DefaultPipeRing(n.t.world)
	}
	ctl := ctlRing(ring)
	size := pipesSize(ring, ctl)
	fd, err := shm.Create("boltmesh-pipes", size)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd) // sent or failed: the mapping keeps the memory
	pair, err := mapPair(fd, size, 0, ring, ctl)
	if err != nil {
		return nil, err
	}
	if err := pair.init(); err != nil {
		pair.release()
		return nil, err
	}
	theirs, err := pair.makeBells()
	if err != nil {
		pair.release()
		return nil, err
	}
	defer closeFDs(theirs[:])
	var ask [meetAsk]byte
	copy(ask[:], token)
	binary.LittleEndian.PutUint32(ask[32:], uint32(n.t.rank))
	binary.LittleEndian.PutUint64(ask[36:], uint64(ring))
	binary.LittleEndian.PutUint64(ask[44:], uint64(ctl))
	binary.LittleEndian.PutUint64(ask[52:], n.t.heap.Size())
	binary.LittleEndian.PutUint64(ask[60:], uint64(size))
	n.probe.put(ask[68:])
	if err := shm.SendFDs(uc, ask[:], fd, theirs[0], theirs[1], n.t.heap.FD()); err != nil {
		pair.release()
		return nil, err
	}
	var reply [meetReply]byte
	k, fds, err := shm.RecvFDs(uc, reply[:], 1)
	if err == nil && (k != meetReply || reply[0] != 1 || len(fds) != 1) {
		closeFDs(fds)
		err = errors.New("the neighbour refused the meeting")
	}
	if err == nil {
		pair.heap, err = heap.Map(fds[0], binary.LittleEndian.Uint64(reply[1:]))
	}
	if err != nil {
		pair.release()
		return nil, err
	}
	pair.copy = pairCopy{pid: pid, in: n.readProbe(rank, pid, reply[9:]), out: reply[9+probeSize] == 1 && n.probe.on()}
	said := []byte{0} // the meeting's last word: whether this rank copies from the acceptor
	if pair.copy.in {
		said[0] = 1
	}
	if _, err := uc.Write(said); err != nil {
		pair.copy.in = false // the acceptor will not send by single copy: no matter
	}
	return pair, nil
}

// pipesSize is the shared memory of a pair's two pipes and, from
// mailboxAt(ring, ctl), its mailbox.
func pipesSize(ring, ctl int) int {
	return roundPage(mailboxAt(ring, ctl) + linkshm.MailboxSize)
}

// mailboxAt is where a pair's mailbox starts in its shared memory: on the
// first page after the pipes.
func mailboxAt(ring, ctl int) int { return roundPage(linkshm.PipeSize(ring) + linkshm.PipeSize(ctl)) }

func roundPage(n int) int {
	page := unix.Getpagesize()
	return (n + page - 1) / page * page
}

// mapPair maps the pipes' memory fd (size bytes, checked for seals and
// size) as side; the caller still owns fd.
func mapPair(fd, size, side, ring, ctl int) (*pairMem, error) {
	if err := shm.Check(fd, size); err != nil {
		return nil, err
	}
	mem, err := shm.Map(fd, size)
	if err != nil {
		return nil, err
	}
	return &pairMem{mem: mem, side: side, bells: [2]int{-1, -1}, ring: ring, ctlRing: ctl}, nil
}

// init lays both pipes out in fresh memory (the creator).
func (m *pairMem) init() error {
	if err := linkshm.InitPipe(m.mem, m.ring); err != nil {
		return err
	}
	return linkshm.InitPipe(m.mem[linkshm.PipeSize(m.ring):], m.ctlRing)
}

// makeBells makes both pipes' bells, keeping this side's ends, and
// returns the other side's (the caller closes them once sent).
func (m *pairMem) makeBells() ([2]int, error) {
	var theirs [2]int
	for i := range m.bells {
		a, b, err := shm.Socketpair()
		if err != nil {
			closeFDs(theirs[:i])
			return theirs, err
		}
		m.bells[i], theirs[i] = a, b
	}
	return theirs, nil
}

// pipe returns lane l's pipe memory, its bell and a release that counts
// the pipe's reference; the caller registers it (linkshm.Open owns
// the bell from then on).
func (m *pairMem) pipe(l lane) ([]byte, int, func()) {
	mem, bell := m.mem[:linkshm.PipeSize(m.ring)], &m.bells[0]
	if l == laneCtl {
		mem, bell = m.mem[linkshm.PipeSize(m.ring):], &m.bells[1]
	}
	m.mu.Lock()
	m.refs++
	fd := *bell
	*bell = -1
	m.mu.Unlock()
	return mem, fd, m.unref
}

// mailbox makes the pair's mailbox, which holds a reference to the memory
// until it is closed.
func (m *pairMem) mailbox() *linkshm.Mailbox {
	m.mu.Lock()
	m.refs++
	m.mu.Unlock()
	at := mailboxAt(m.ring, m.ctlRing)
	return linkshm.NewMailbox(m.mem[at:at+linkshm.MailboxSize], m.side, m.unref)
}

// unref is a pipe's or the mailbox's release: the memory is unmapped
// after the last.
func (m *pairMem) unref() {
	m.mu.Lock()
	m.refs--
	last := m.refs == 0
	m.mu.Unlock()
	if last {
		shm.Unmap(m.mem)
	}
}

// release gives back a pair whose pipes were never registered: bells,
// memory and the neighbour's heap.
func (m *pairMem) release() {
	closeFDs(m.bells[:])
	m.bells = [2]int{-1, -1}
	shm.Unmap(m.mem)
	if m.heap != nil {
		m.heap.Close()
	}
}

// closeFDs closes every fd in fds that is not -1.
func closeFDs(fds []int) {
	for _, fd := range fds {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
}

// dialNeighbour ends the control stream's handshake hc with rank as the
// dialer: the acceptor's NEIGHBOUR read, the meeting tried, the choice
// sent. It returns what the pair shares, or nil for TCP.
func (hc *hsConn) dialNeighbour(n *neighbours, rank int) (*pairMem, error) {
	addr, err := hc.read(frame.KindNeighbour, 0)
	if err != nil {
		return nil, withRank(err, rank)
	}
	var pair *pairMem
	if len(addr) == 0 {
		n.fallBack(rank, errors.New("the neighbour offers no meeting point"))
	} else if pair, err = n.meet(rank, string(addr), hc.mac(labelNeighbour, hc.raw[:], hc.peer[:])); err != nil {
		n.fallBack(rank, err)
	}
	choice := frame.NeighbourTCP
	if pair != nil {
		choice = frame.NeighbourPipes
	}
	if err := hc.write(frame.KindNeighbour, frame.FlagReply, choice, nil); err != nil {
		if pair != nil {
			pair.release()
		}
		return nil, err
	}
	return pair, nil
}

// acceptNeighbour ends the control stream's handshake hc with the dialer
// rank as the acceptor: its meeting point offered, the dialer's choice
// read. It returns what the pair shares, or nil for TCP.
func (hc *hsConn) acceptNeighbour(n *neighbours, rank int) (*pairMem, error) {
	var addr []byte
	var o *offer
	if n.ln != nil {
		o = n.expect(hc, rank)
		addr = []byte(n.ln.Addr())
	}
	if err := hc.write(frame.KindNeighbour, 0, 0, addr); err != nil {
		n.cancel(o)
		return nil, err
	}
	h, _, err := hc.readFrame(frame.KindNeighbour, frame.FlagReply)
	if err != nil {
		n.cancel(o)
		return nil, wrapRemote(hc, rank, err)
	}
	if h.Aux != frame.NeighbourPipes {
		n.cancel(o)
		return nil, nil
	}
	var pair *pairMem
	if o != nil {
		// The dialer chose pipes once it had this rank's answer, which the
		// meeting sends just before it ends.
		timer := time.NewTimer(n.t.opts.HandshakeTimeout)
		select {
		case <-o.done:
		case <-timer.C:
		}
		timer.Stop()
		n.mu.Lock()
		select {
		case <-o.done:
			pair, o.pair = o.pair, nil
		default:
		}
		n.mu.Unlock()
	}
	if pair == nil {
		n.cancel(o)
		return nil, &HandshakeError{Addr: hc.addr(), Rank: rank, Local: true, Reason: "chose shared memory without meeting", Err: ErrProtocol}
	}
	return pair, nil
}

// cancel drops offer o, if any: its meeting, if it took place or takes
// place later, is released.
func (n *neighbours) cancel(o *offer) {
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
			o.pair.release()
			o.pair = nil
		}
	default:
	}
}

// neighbourStep is the medium step of neighbours (medium.go): on a
// mesh's control stream between ranks of one host, the handshake ends
// with NEIGHBOUR, and the pair meets over shared memory (m.pair) or
// stays on TCP.
func neighbourStep(t *NetTransport, hc *hsConn, r, s int, dialer bool, m *medium) (err error) {
	switch {
	case !hc.neighbourly(t, s):
	case dialer:
		m.pair, err = hc.dialNeighbour(t.topo.nbr, r)
	default:
		m.pair, err = hc.acceptNeighbour(t.topo.nbr, r)
	}
	return err
}

// neighbourly reports whether the handshake hc ends with NEIGHBOUR: a
// mesh's control stream between ranks whose HELLOs name one host.
func (hc *hsConn) neighbourly(t *NetTransport, stream int) bool {
	var zero [frame.HostIDSize]byte
	return stream == t.ctlIndex() && hc.self.HostID != zero && hc.theirs.HostID == hc.self.HostID
}
