package ioloop

import (
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/boltmesh/boltmesh/frame"
)

// Options configures a Loop. The zero value selects every default.
type Options struct {
	// MaxFrame bounds the payload length of an incoming frame; a longer one
	// fails its connection with ErrProtocol. Default frame.DefaultMaxLength.
	MaxFrame uint64
	// StagingSize is the per-connection read buffer that headers and small
	// payloads are read through. Default 16 KiB, minimum 64 bytes.
	StagingSize int
	// DirectRead is the payload remainder at or above which the payload is
	// read straight into its destination instead of through the staging
	// buffer. Default 4 KiB.
	DirectRead int
	// Events is how many readiness events one poller wait returns at most.
	// Default 128.
	Events int
	// Spin is how long a Send whose frame does not fit in the socket keeps
	// retrying the write itself while no byte moves, before it sleeps until
	// the loop sees the socket writable. 0 disables it.
	Spin time.Duration
	// MaxPosted bounds what a connection's frames that nobody waits for
	// (Post, PostBuffer, Queue) may hold while they wait to be written:
	// PostOverhead per frame plus its copied payload. Past it the
	// connection stops reading, so that a peer which sends requests
	// without reading the answers is held back by TCP flow control instead
	// of growing the answers' queue; reading resumes below half. 0: no
	// bound. Default 0.
	MaxPosted int64
}

func (o *Options) setDefaults() error {
	if o.MaxFrame == 0 {
		o.MaxFrame = frame.DefaultMaxLength
	}
	if o.StagingSize == 0 {
		o.StagingSize = 16 << 10
	}
	if o.StagingSize < 2*frame.HeaderSize {
		return fmt.Errorf("ioloop: Options.StagingSize %d is below %d", o.StagingSize, 2*frame.HeaderSize)
	}
	if o.DirectRead <= 0 {
		o.DirectRead = 4 << 10
	}
	if o.Events <= 0 {
		o.Events = 128
	}
	return nil
}

// Loop is an event loop: one goroutine that waits on the poller and drives
// the registered connections. All methods are safe for concurrent use.
type Loop struct {
	opts     Options
	p        *poller
	pf       *os.File        // the poller fd, registered with Go's poller
	rc       syscall.RawConn // pf's, to park until the poller fd is readable
	pollFn   func(uintptr) bool
	evs      []event // result of the last pollFn
	perr     error
	hotUntil atomic.Int64         // nanotime until which wait polls without parking
	spin     atomic.Int64         // Options.Spin, in nanoseconds, until SetSpin
	hot      atomic.Pointer[Conn] // the connection that made it hot
	mu       sync.RWMutex
	conns    map[int]*Conn
	wk       wakes // the Conns woken, for the loop to serve (wake.go)
	closed   atomic.Bool
	done     chan struct{}
}

// New starts a loop.
func New(opts Options) (*Loop, error) {
	if err := opts.setDefaults(); err != nil {
		return nil, err
	}
	p, err := newPoller(opts.Events)
	if err != nil {
		return nil, err
	}
	l := &Loop{opts: opts, p: p, conns: make(map[int]*Conn), done: make(chan struct{})}
	l.pf = os.NewFile(uintptr(p.fd), "ioloop-poller")
	if l.rc, err = l.pf.SyscallConn(); err != nil {
		p.close()
		l.pf.Close()
		return nil, err
	}
	l.pollFn = l.pollOnce
	l.spin.Store(int64(opts.Spin))
	go l.run()
	return l, nil
}

// Register hands fd, a connected stream socket, to the loop. The loop owns
// fd from now on and closes it when the Conn is closed or fails, also when
// Register itself fails. id is returned by Conn.ID and reported in errors.
func (l *Loop) Register(fd int, id int, h Handler) (*Conn, error) {
	return l.RegisterFunc(fd, id, h, nil)
}

// RegisterFunc is Register that calls ready, if not nil, with the new Conn
// before the loop can call its handler: whatever ready stores (where the
// handler will look for the Conn) is seen by every handler call.
func (l *Loop) RegisterFunc(fd int, id int, h Handler, ready func(*Conn)) (*Conn, error) {
	s, err := SocketStream(fd)
	if err != nil {
		return nil, err
	}
	return l.RegisterStream(s, id, h, ready)
}

// RegisterStream hands s to the loop as a Conn: Register for a Stream of
// another kind than a socket (a link kind's own package makes it, in
// non-blocking mode). The Conn owns s from now on and closes it when it
// is closed or fails, also when RegisterStream itself fails; an Attacher
// is attached first. ready is RegisterFunc's.
func (l *Loop) RegisterStream(s Stream, id int, h Handler, ready func(*Conn)) (*Conn, error) {
	c := newConn(l, s, id, h)
	if a, ok := s.(Attacher); ok {
		a.Attach(c)
	}
	return l.register(c, ready)
}

// register adds c, whose Stream is non-blocking, to the poller.
func (l *Loop) register(c *Conn, ready func(*Conn)) (*Conn, error) {
	if ready != nil {
		ready(c)
	}
	fd := c.fd
	l.mu.Lock()
	if l.closed.Load() {
		l.mu.Unlock()
		c.closeFD()
		return nil, ErrClosed
	}
	l.conns[fd] = c
	err := l.p.add(fd) // under l.mu, so that Close cannot fail c meanwhile
	if err != nil {
		delete(l.conns, fd)
	}
	l.mu.Unlock()
	if err != nil {
		c.closeFD()
		return nil, err
	}
	c.Progress() // bytes that arrived before registration
	return c, nil
}

func (l *Loop) forget(fd int) {
	l.mu.Lock()
	delete(l.conns, fd)
	l.mu.Unlock()
}

func (l *Loop) lookup(fd int) *Conn {
	l.mu.RLock()
	c := l.conns[fd]
	l.mu.RUnlock()
	return c
}

// run is the loop goroutine. It parks in Go's network poller until the
// poller fd is readable, so that it holds no thread while idle and the
// goroutines it wakes run at once, then dispatches the ready fds.
func (l *Loop) run() {
	defer close(l.done)
	for {
		err := l.wait()
		if l.closed.Load() {
			return
		}
		if err == nil {
			err = l.perr
		}
		if err != nil {
			l.failAll("poll", err)
			return
		}
		for _, ev := range l.evs {
			c := l.lookup(ev.fd)
			if c == nil {
				continue
			}
			if c.bell != nil {
				c.onBell()
				continue
			}
			if ev.writable {
				c.onWritable()
			}
			if ev.readable {
				c.onReadable()
			}
		}
		l.serveWakes()
	}
}

// wait collects the next ready fds. While the loop is hot (KeepHot) it
// polls without parking, so that a request that only the loop serves (a
// one-sided get while its target's goroutines sleep) is answered without a
// wake-up; otherwise it parks in Go's poller.
func (l *Loop) wait() error {
	for i := 0; l.hotUntil.Load() > nanotime(); i++ {
		c := l.hot.Load()
		if c != nil && c.polledRecently() {
			break // a waiting goroutine spins on it already: do not compete
		}
		if c != nil && i%4 != 3 {
			c.progress(true) // the hot connection first: one read, no epoll_wait
		} else if l.pollOnce(0) {
			return nil
		}
		runtime.Gosched()
	}
	return l.rc.Read(l.pollFn)
}

// keepHot makes the loop poll c, and every fd now and then, without
// parking for Options.Spin from now.
func (l *Loop) keepHot(c *Conn) {
	if spin := l.spin.Load(); spin > 0 {
		l.hot.Store(c)
		l.hotUntil.Store(nanotime() + spin)
	}
}

// SetSpin replaces Options.Spin from now on (0 or less: no spinning),
// for a user who learns after New that the loop's spins cost others a
// core.
func (l *Loop) SetSpin(d time.Duration) { l.spin.Store(int64(d)) }

// spinFor is the current Options.Spin.
func (l *Loop) spinFor() time.Duration { return time.Duration(l.spin.Load()) }

// nanotime is a monotonic clock in nanoseconds.
func nanotime() int64 { return int64(time.Since(epoch)) }

var epoch = time.Now()

// pollOnce collects ready fds without blocking; false makes RawConn.Read
// park until the poller fd is readable and call it again.
func (l *Loop) pollOnce(uintptr) bool {
	l.evs, l.perr = l.p.wait()
	return l.perr != nil || len(l.evs) > 0 || l.closed.Load() || l.wk.any.Load()
}

func (l *Loop) failAll(op string, err error) {
	l.mu.RLock()
	cs := make([]*Conn, 0, len(l.conns))
	for _, c := range l.conns {
		cs = append(cs, c)
	}
	l.mu.RUnlock()
	for _, c := range cs {
		c.fail(op, err)
	}
}

// Close stops the loop and closes every connection still registered; their
// handlers see ErrClosed. It waits for the loop goroutine to exit.
func (l *Loop) Close() error {
	if l.closed.Swap(true) {
		<-l.done
		return nil
	}
	werr := l.p.wake()
	<-l.done
	l.failAll("close", ErrClosed)
	l.p.close()
	if err := l.pf.Close(); err != nil {
		return err
	}
	return werr
}
