package engine_test

import (
	"crypto/hmac"
	"crypto/rand"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/boltmesh/boltmesh/frame"
)

// A raw rank for the fuzz targets of peer_fuzz_test.go: it joins a mesh
// or a star by the spec's handshake over plain sockets, and then sends
// whatever frames it is told while a reader per connection takes in what
// the real ranks send: it grants back at once the credit of what they
// send it (it holds nothing), answers a withdrawn RTS it had not answered
// with CTS|Error (as the spec asks of a receiver), and records the rest
// for the fuzz target to look at.

// rawStream is one connection of the raw rank.
type rawStream struct {
	nc  net.Conn
	wmu sync.Mutex // one frame written at a time
}

// write writes one frame: h (its Length as given) and payload, which may
// be shorter than h.Length only for a frame the receiver must refuse
// before reading its payload.
func (s *rawStream) write(h frame.Header, payload []byte) error {
	var hb [frame.HeaderSize]byte
	h.Encode(&hb)
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.nc.SetWriteDeadline(time.Now().Add(rawWriteWait))
	_, err := (&net.Buffers{hb[:], payload}).WriteTo(s.nc)
	return err
}

// rawWriteWait bounds one frame's write: a rank that stops reading for
// that long is stuck.
const rawWriteWait = 10 * time.Second

// rawFrame is a frame the raw rank received.
type rawFrame struct {
	h frame.Header
	p []byte
}

// rawPeer is the raw rank: rank, in a world of world, with streams[r]
// the connections to real rank r (a star worker has one, to rank 0, which
// forwards the frames of and to the other workers).
type rawPeer struct {
	rank, world int
	star        bool
	streams     map[int][]*rawStream

	mu       sync.Mutex
	cond     chan struct{}  // closed and replaced when anything arrives
	granted  map[int]uint64 // cumulative credit each real rank granted
	given    map[int]uint64 // cumulative credit granted to each real rank
	got      []rawFrame     // received frames not yet taken
	rts      map[rtsKey]*rtsState
	dead     error // the first read error
	deadFrom int
	ended    map[int]int // real rank -> its connections that ended
	complete bool        // star: the coordinator said the world is complete (HEARTBEAT)
	readers  sync.WaitGroup
	deaf     atomic.Bool  // the readers stop reading (they still end at close)
	shut     atomic.Bool  // close was called
	relayed  atomic.Int64 // star: frames the coordinator relayed in parts
}

// rtsKey names an RTS a real rank sent the raw rank.
type rtsKey struct {
	from int
	id   uint64
}

// rtsState is what became of such an RTS.
type rtsState struct {
	tag, aux uint32
	n        uint64
	answered bool // the raw rank sent its CTS (or CTS|Error)
	data     bool // the answer was a CTS: the DATA follows
	tomb     bool // withdrawn before it came (on the control stream): answered then, dropped when it comes
}

// rawFuzzKey is the mesh key of the fuzz targets' meshes.
var rawFuzzKey = []byte("fuzz mesh key")

// rawDial joins as rank via rank to at addr, stream s of streams, in a
// mesh or a star, proving rawFuzzKey. It returns the connection ready for
// frames (before any CREDIT).
func rawDial(addr string, rank, to, world, s, streams int, star bool) (net.Conn, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	m := frame.Hello{Version: frame.Version, World: uint32(world), Rank: uint32(rank), Stream: uint16(s), Streams: uint16(streams), MeshID: testMeshID("boltmesh")}
	if star {
		m.Topology = frame.TopologyStar
	}
	rand.Read(m.Nonce[:])
	var helloD [frame.HelloSize]byte
	m.Encode(&helloD)
	fail := func(err error) (net.Conn, error) {
		c.Close()
		return nil, fmt.Errorf("raw rank %d stream %d to rank %d: %w", rank, s, to, err)
	}
	if _, err := c.Write(encodeFrame(frame.KindHello, 0, helloD[:])); err != nil {
		return fail(err)
	}
	h, helloA, err := readFrame(c)
	if err != nil || h.Kind != frame.KindHello || h.Flags != frame.FlagReply {
		return fail(fmt.Errorf("want HELLO|Reply, got %v flags %#x: %v", h.Kind, h.Flags, err))
	}
	if _, err := c.Write(encodeFrame(frame.KindAuth, 0, handshakeMAC(rawFuzzKey, "boltmesh dialer", helloD[:], helloA))); err != nil {
		return fail(err)
	}
	h, macA, err := readFrame(c)
	if err != nil || h.Kind != frame.KindAuth || h.Flags != frame.FlagReply || !hmac.Equal(macA, handshakeMAC(rawFuzzKey, "boltmesh acceptor", helloD[:], helloA)) {
		return fail(fmt.Errorf("want AUTH|Reply with the acceptor's proof, got %v flags %#x: %v", h.Kind, h.Flags, err))
	}
	c.SetDeadline(time.Time{})
	return c, nil
}

func newRawPeer(rank, world int, star bool) *rawPeer {
	return &rawPeer{
		rank: rank, world: world, star: star, streams: make(map[int][]*rawStream),
		cond: make(chan struct{}), granted: make(map[int]uint64), given: make(map[int]uint64), rts: make(map[rtsKey]*rtsState), ended: make(map[int]int),
	}
}

// rawWindow is the credit the raw rank grants each real rank, and what
// it grants back as it takes their frames.
const rawWindow = 1 << 20

// add adopts the connections to real rank r, starts their readers, and
// grants r its window on the first.
func (rp *rawPeer) add(r int, conns []net.Conn) error {
	for _, c := range conns {
		rp.streams[r] = append(rp.streams[r], &rawStream{nc: c})
	}
	for i, s := range rp.streams[r] {
		ctl := !rp.star && i == len(conns)-1 // a mesh's last stream is the control stream
		rp.readers.Go(func() { rp.read(r, i, s, ctl) })
	}
	return rp.grant(r, rawWindow)
}

// grant grants rank to n more bytes of credit (the first grant is the
// window).
func (rp *rawPeer) grant(to int, n uint64) error {
	rp.mu.Lock()
	rp.given[to] += n
	total := rp.given[to]
	rp.mu.Unlock()
	return rp.send(to, 0, frame.Header{Kind: frame.KindCredit, Offset: total}, nil)
}

// dst is the Dst of a frame for rank to.
func (rp *rawPeer) dst(to int) uint16 {
	if rp.star && to != 0 {
		return uint16(to + 1)
	}
	return 0
}

// ctlStreamIndex, as the stream of rawPeer.send, sends any frame on the
// control stream (in a mesh).
const ctlStreamIndex = -1

// conn returns the stream that carries h to rank to: in a mesh, data
// stream s for data frames (SEND, RTS, DATA; see frame/spec.md,
// "Streams"), and the control stream, the last, for the others and when
// s is ctlStreamIndex.
func (rp *rawPeer) conn(to, s int, h frame.Header) *rawStream {
	if rp.star {
		return rp.streams[0][0]
	}
	ss := rp.streams[to]
	switch {
	case s == ctlStreamIndex || !rawDataKind(h):
		return ss[len(ss)-1]
	case h.Kind != frame.KindData:
		return ss[0] // SEND and RTS take data stream 0
	}
	return ss[s%(len(ss)-1)]
}

// rawDataKind reports whether h goes on a data stream. The raw rank sends
// its withdrawals (RTS|Error) there too, behind their RTS, where they use
// no credit and leave no tombstone (frame/spec.md, "Streams and striping"), unless the
// script sends one on the control stream (opWithdraw).
func rawDataKind(h frame.Header) bool {
	switch h.Kind {
	case frame.KindSend, frame.KindRTS, frame.KindData:
		return true
	}
	return false
}

// send sends a frame to rank to on stream s, filling in Src, Dst (unless
// h has one) and Length.
func (rp *rawPeer) send(to, s int, h frame.Header, payload []byte) error {
	h.Src = uint32(rp.rank)
	if h.Dst == 0 {
		h.Dst = rp.dst(to)
	}
	h.Length = uint64(len(payload))
	return rp.conn(to, s, h).write(h, payload)
}

// changed returns the channel the next arrival closes.
func (rp *rawPeer) changed() <-chan struct{} {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	return rp.cond
}

func (rp *rawPeer) notify() {
	close(rp.cond)
	rp.cond = make(chan struct{})
}

// origin is the rank a frame from connection r comes from.
func (rp *rawPeer) origin(r int, h frame.Header) int {
	if rp.star {
		return int(h.Src)
	}
	return r
}

// read takes in the frames of stream i of the connection to rank r (the
// control stream if ctl). A frame the coordinator relays in parts (RELAY,
// PART) is taken once whole, as a worker takes it.
func (rp *rawPeer) read(r, i int, s *rawStream, ctl bool) {
	relays := map[uint32]*rawFrame{}
	for {
		for rp.deaf.Load() && !rp.shut.Load() {
			time.Sleep(time.Millisecond)
		}
		h, p, err := readFrame(s.nc)
		if err == nil && rp.star {
			h, p, err = rp.unrelay(relays, h, p)
		}
		if err != nil {
			rp.mu.Lock()
			if rp.dead == nil {
				rp.dead, rp.deadFrom = err, r
			}
			rp.ended[r]++
			rp.notify()
			rp.mu.Unlock()
			return
		}
		if h.Kind != frame.KindRelay && h.Kind != frame.KindPart {
			rp.take(rp.origin(r, h), h, p, ctl)
		}
	}
}

// unrelay follows the frames the coordinator relays in parts, each
// source's in relays: it returns the relayed frame whole with its last
// PART, a RELAY or another PART as it came, and any other frame as it is.
// A sequence the spec does not allow is an error.
func (rp *rawPeer) unrelay(relays map[uint32]*rawFrame, h frame.Header, p []byte) (frame.Header, []byte, error) {
	f := relays[h.Src]
	switch {
	case h.Kind == frame.KindRelay && f == nil:
		rh, err := frame.DecodeRelay(p, h.Src, 0)
		if err != nil {
			return h, nil, fmt.Errorf("raw rank: a bad RELAY: %w", err)
		}
		relays[h.Src] = &rawFrame{h: rh, p: make([]byte, 0, rh.Length)}
		rp.relayed.Add(1)
		return h, nil, nil
	case h.Kind == frame.KindPart && f != nil && h.Offset == uint64(len(f.p)) && h.Length > 0 && uint64(len(f.p))+h.Length <= f.h.Length:
		if f.p = append(f.p, p...); uint64(len(f.p)) == f.h.Length {
			delete(relays, h.Src)
			return f.h, f.p, nil
		}
		return h, nil, nil
	case h.Kind == frame.KindGone:
		delete(relays, h.Src)
		return h, p, nil
	case f != nil || h.Kind == frame.KindRelay || h.Kind == frame.KindPart:
		return h, nil, fmt.Errorf("raw rank: a %v (Src %d, Offset %d, %d bytes) where the coordinator relays in parts from that source: %v", h.Kind, h.Src, h.Offset, h.Length, f != nil)
	}
	return h, p, nil
}

// take handles one arrival from rank from, on the control stream if ctl.
func (rp *rawPeer) take(from int, h frame.Header, p []byte, ctl bool) {
	var back uint64
	var refuse *rtsKey
	rp.mu.Lock()
	switch {
	case h.Kind == frame.KindCredit:
		rp.granted[from] = max(rp.granted[from], h.Offset)
	case h.Kind == frame.KindHeartbeat && rp.star && from == 0:
		rp.complete = true
	case h.Kind == frame.KindRTS:
		k := rtsKey{from, h.Offset}
		st := rp.rts[k]
		switch {
		case h.Flags&frame.FlagError == 0 && st != nil && st.tomb:
			delete(rp.rts, k) // withdrawn before it came, and answered then
			back = frame.Cost(0)
		case h.Flags&frame.FlagError == 0:
			n, _ := frame.DecodeRTS(p, 0)
			rp.rts[k] = &rtsState{tag: h.Tag, aux: h.Aux, n: n}
			back = frame.Cost(0)
		case st != nil && !st.answered:
			st.answered = true
			refuse = &k
		case st == nil && ctl:
			// A withdrawal on the control stream that overtook its RTS:
			// answered at once, as a real rank does (a tombstone).
			rp.rts[k] = &rtsState{answered: true, tomb: true}
			refuse = &k
		}
		if h.Flags&frame.FlagError != 0 && ctl {
			back = frame.Cost(0) // a withdrawal there uses credit
		}
	case frame.Credited(h.Kind, h.Flags):
		back = frame.Cost(h.Length)
	}
	if h.Kind != frame.KindCredit && h.Kind != frame.KindHeartbeat {
		rp.got = append(rp.got, rawFrame{h, p})
	}
	rp.notify()
	rp.mu.Unlock()
	if back > 0 {
		rp.grant(from, back)
	}
	if refuse != nil {
		rp.send(from, 0, frame.Header{Kind: frame.KindCTS, Flags: frame.FlagError, Offset: refuse.id}, nil)
	}
}

// takeFrames removes and returns the received frames that match.
func (rp *rawPeer) takeFrames(match func(rawFrame) bool) []rawFrame {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	var got, rest []rawFrame
	for _, f := range rp.got {
		if match(f) {
			got = append(got, f)
		} else {
			rest = append(rest, f)
		}
	}
	rp.got = rest
	return got
}

// forget drops what was received and the real ranks' RTSs (whose sends
// all ended with the last script): a new script starts. It keeps the
// tombstones: a withdrawal that overtook its RTS ended the send, but the
// RTS may still be on its way, and taken for a new one it would get a
// CTS the real rank no longer waits for.
func (rp *rawPeer) forget() {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	rp.got = nil
	for k, st := range rp.rts {
		if !st.tomb {
			delete(rp.rts, k)
		}
	}
}

// deadErr returns the first read error, if a connection ended.
func (rp *rawPeer) deadErr() error {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	return rp.dead
}

// credit returns the credit rank to has granted the raw rank in all.
func (rp *rawPeer) credit(to int) uint64 {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	return rp.granted[to]
}

// waitFor waits until cond (called with rp.mu held) holds, a connection
// ends, or d passes; it reports whether cond held.
func (rp *rawPeer) waitFor(d time.Duration, cond func() bool) bool {
	deadline := time.After(d)
	for {
		rp.mu.Lock()
		ok, dead, ch := cond(), rp.dead != nil, rp.cond
		rp.mu.Unlock()
		if ok {
			return true
		}
		if dead {
			return false
		}
		select {
		case <-ch:
		case <-time.After(5 * time.Millisecond): // cond may watch more than arrivals
		case <-deadline:
			return false
		}
	}
}

// close closes every connection and waits for the readers.
func (rp *rawPeer) close() {
	rp.shut.Store(true)
	for _, ss := range rp.streams {
		for _, s := range ss {
			s.nc.Close()
		}
	}
	rp.readers.Wait()
}
