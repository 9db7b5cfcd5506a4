package engine

import (
	linkshm "github.com/boltmesh/boltmesh/internal/link/shm"
	"github.com/boltmesh/boltmesh/ioloop"
)

// A neighbour's meshLink (neighbour.go) has two pipes for lanes: the data
// pipe carries SEND, RTS and DATA, the control pipe everything else, each
// an ioloop.Conn over shared memory that the matcher cannot tell from a
// TCP stream. There is no striping: one copy in and one out at memory
// speed leave nothing for a second lane to add. The pair's TCP streams
// stay registered, idle (meshStream.idle); the end of either pipe's bell
// is the peer's end.

// usePipes turns the link's lanes into pipes, before either is attached:
// the TCP data streams attached so far, and every TCP stream attached
// from now on, are idle.
func (l *meshLink) usePipes() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.data {
		if c != nil {
			l.tcp = append(l.tcp, c)
		}
	}
	l.data = make([]*ioloop.Conn, 1)
	l.pipes.Store(true)
}

func (l *meshLink) usePair(pair *linkshm.Pair) error { return l.adoptPipes(pair) }

// attachPipe registers c as lane n's pipe, as the event loop adopts it,
// and reports whether both pipes are attached.
func (l *meshLink) attachPipe(n lane, c *ioloop.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n == laneCtl {
		l.ctl.Store(c)
	} else {
		l.data[0] = c
	}
	return l.data[0] != nil && l.ctl.Load() != nil
}

// adoptPipes makes l a neighbour's: the neighbour's heap
// mapped for one-sided operations, then both pipes registered with the
// event loop. Its window opens once both are attached.
func (l *meshLink) adoptPipes(pair *linkshm.Pair) error {
	p, t := l.p, l.p.t
	l.usePipes()
	mb := pair.Mailbox()
	mb.SetRing(func(barrier bool) { t.wake(p, barrier) })
	p.setCaps(&caps{cheap: true, mailbox: mb, heap: pair.MappedHeap(), copy: pair.Copy}) // the heap and mailbox are the peer's now: released at Close
	for _, n := range []lane{laneCtl, laneData} {
		take := pair.DataPipe
		if n == laneCtl {
			take = pair.CtlPipe
		}
		mem, bell, release := take()
		open := false
		s, err := linkshm.Open(mem, pair.Side(), bell, release)
		if err != nil {
			pair.CloseBells() // the other pipe's, if it was not opened
			return err
		}
		_, err = t.loop.RegisterStream(s, p.rank, &meshStream{l: l, lane: n, pipe: true}, func(c *ioloop.Conn) {
			ready := l.attachPipe(n, c)
			p.mu.Lock()
			defer p.mu.Unlock()
			open = ready && !p.windowOpen
			p.windowOpen = p.windowOpen || open
		})
		if err != nil {
			pair.CloseBells() // the other pipe's, if it was not registered
			return err
		}
		if open {
			p.openWindow()
		}
	}
	return nil
}
