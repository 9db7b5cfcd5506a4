package shm

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/boltmesh/boltmesh/frame"
	"github.com/boltmesh/boltmesh/internal/shm"
)

// Neighbours: ranks on one host (their HELLOs carry the same HostID) end
// their control stream's handshake with NEIGHBOUR, meet over a Unix
// socket (the meeting: ListenMeetings, Meet) and from then on move their
// frames through two pipes in shared memory, one per lane, while each
// maps the other's heap for Put and Get (frame/spec.md, "Neighbours").
// The acceptor of the pair (the lower rank) offers its meeting point in
// its NEIGHBOUR; the dialer meets it there and says in its answer which
// way the pair goes. A pair that cannot meet (no listener, a refused
// descriptor, another user) stays on TCP, and says why once in the log.
//
// Lock rule: Neighbours has none of its own; the meeting point has its
// own (Meetings), the logs' once are sync.Once, and the rest is set
// before the mesh forms.

// Neighbours is one rank's side of the meetings with the ranks of its
// host.
type Neighbours struct {
	cfg   NeighboursConfig
	host  [frame.HostIDSize]byte // this rank's host, as its HELLOs say; zero: no neighbours
	meet  *Meetings              // where higher ranks on this host meet this one; nil if none
	probe *Probe                 // what neighbours read to learn that they may copy from this rank
	warn  sync.Once              // the first fallback to TCP is logged
	why   sync.Once              // the first refusal of a single copy is logged
}

// NeighboursConfig is what a rank brings to its neighbours.
type NeighboursConfig struct {
	On            bool   // neighbours may meet: false keeps every pair on TCP
	HostID        string // the host's identity as configured ("" finds it: internal/shm.HostID)
	Rank, World   int
	Ring          int // the pairs' data ring (the dialer's choice)
	HeapFD        int // this rank's heap, which neighbours map
	HeapSize      uint64
	Timeout       time.Duration // a meeting's deadline
	SingleCopyMin int           // the single copy's threshold; 0: off
	Logger        *slog.Logger
}

// LabelNeighbour is the HMAC label of a meeting's token.
const LabelNeighbour = "boltmesh neighbour"

// NewNeighbours finds this rank's host and, if it accepts higher ranks,
// opens its meeting point. Off, or where the host cannot be told, it has
// no host: every pair stays on TCP.
func NewNeighbours(cfg NeighboursConfig) *Neighbours {
	n := &Neighbours{cfg: cfg}
	if !cfg.On || cfg.World < 2 {
		return n
	}
	n.probe = NewProbe(cfg.SingleCopyMin, n.refusedCopy)
	host, err := shm.HostID(cfg.HostID)
	if err != nil {
		n.fallBack(-1, fmt.Errorf("this host's identity: %w", err))
		return n
	}
	n.host = host
	if cfg.Rank < cfg.World-1 {
		if n.meet, err = ListenMeetings(n.config(), n.fallBack); err != nil {
			n.fallBack(-1, fmt.Errorf("listening for neighbours: %w", err))
			return n
		}
	}
	return n
}

// Host returns this rank's host as its HELLOs name it; zero: none, no
// neighbours.
func (n *Neighbours) Host() [frame.HostIDSize]byte { return n.host }

// config is what this rank brings to its meetings.
func (n *Neighbours) config() MeetConfig {
	return MeetConfig{Rank: n.cfg.Rank, HeapFD: n.cfg.HeapFD, HeapSize: n.cfg.HeapSize, Ring: n.cfg.Ring,
		Timeout: n.cfg.Timeout, Probe: n.probe}
}

// fallBack logs, once, that a pair on one host stays on TCP.
func (n *Neighbours) fallBack(rank int, why error) {
	n.warn.Do(func() {
		n.cfg.Logger.Warn("boltmesh: ranks on one host stay on TCP (logged once)", "rank", n.cfg.Rank, "peer", rank, "err", why)
	})
}

// refusedCopy logs, once, that the kernel refuses this rank a copy from
// a neighbour's memory: large messages go through the rings.
func (n *Neighbours) refusedCopy(rank int, err error) {
	n.why.Do(func() {
		n.cfg.Logger.Info("boltmesh: large messages between neighbours go through the rings, not by single copy (logged once)", "rank", n.cfg.Rank, "peer", rank, "err", err)
	})
}

// Close stops meeting: the listener closes and every meeting not taken
// is released. It runs when the mesh has formed, and at Close.
func (n *Neighbours) Close() {
	if n.meet != nil {
		n.meet.Close()
	}
}

// Handshake is the end of a control stream's handshake that the meeting
// is told over: NEIGHBOUR frames, and the stream's keyed MAC. Its errors
// are the caller's, passed on as they are.
type Handshake interface {
	// Read reads the next frame, which must be of kind with flags.
	Read(kind frame.Kind, flags frame.Flags) (frame.Header, []byte, error)
	// Write writes a frame.
	Write(kind frame.Kind, flags frame.Flags, aux uint32, payload []byte) error
	// Token is the meeting's token: the keyed MAC of label over the
	// dialer's and then the acceptor's handshake values.
	Token(label string) []byte
}

// Neighbourly reports whether a handshake between the hosts self and
// theirs (their HELLOs' HostID) ends with NEIGHBOUR: both known, and one.
func Neighbourly(self, theirs [frame.HostIDSize]byte) bool {
	return self != [frame.HostIDSize]byte{} && self == theirs
}

// Dial ends the control stream's handshake hs with rank as the dialer:
// the acceptor's NEIGHBOUR read, the meeting tried, the choice sent. It
// returns what the pair shares, or nil for TCP.
func (n *Neighbours) Dial(hs Handshake, rank int) (*Pair, error) {
	_, addr, err := hs.Read(frame.KindNeighbour, 0)
	if err != nil {
		return nil, err
	}
	var pair *Pair
	if len(addr) == 0 {
		n.fallBack(rank, errors.New("the neighbour offers no meeting point"))
	} else if pair, err = Meet(n.config(), rank, string(addr), hs.Token(LabelNeighbour)); err != nil {
		n.fallBack(rank, err)
	}
	choice := frame.NeighbourTCP
	if pair != nil {
		choice = frame.NeighbourPipes
	}
	if err := hs.Write(frame.KindNeighbour, frame.FlagReply, choice, nil); err != nil {
		if pair != nil {
			pair.Release()
		}
		return nil, err
	}
	return pair, nil
}

// Accept ends the control stream's handshake hs with the dialer rank as
// the acceptor: its meeting point offered, the dialer's choice read. It
// returns what the pair shares, or nil for TCP; ErrNoMeeting if the
// dialer chose shared memory without meeting.
func (n *Neighbours) Accept(hs Handshake, rank int) (*Pair, error) {
	var addr []byte
	var o *Offer
	if n.meet != nil {
		var tok [32]byte
		copy(tok[:], hs.Token(LabelNeighbour))
		o = n.meet.Expect(tok, rank)
		addr = []byte(n.meet.Addr())
	}
	cancel := func() {
		if n.meet != nil {
			n.meet.Cancel(o)
		}
	}
	if err := hs.Write(frame.KindNeighbour, 0, 0, addr); err != nil {
		cancel()
		return nil, err
	}
	h, _, err := hs.Read(frame.KindNeighbour, frame.FlagReply)
	if err != nil {
		cancel()
		return nil, err
	}
	if h.Aux != frame.NeighbourPipes {
		cancel()
		return nil, nil
	}
	var pair *Pair
	if o != nil {
		// The dialer chose pipes once it had this rank's answer, which the
		// meeting sends just before it ends.
		pair = n.meet.Await(o, n.cfg.Timeout)
	}
	if pair == nil {
		cancel()
		return nil, ErrNoMeeting
	}
	return pair, nil
}
