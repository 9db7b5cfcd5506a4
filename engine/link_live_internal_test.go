package engine

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/frame"
	"github.com/boltmesh/boltmesh/internal/link/sealed"
	"github.com/boltmesh/boltmesh/internal/plumb"
	"github.com/boltmesh/boltmesh/ioloop"
)

// TestCheckLiveCounts pins the heartbeat's arithmetic on a real
// connection whose peer sends nothing unless told to, checks driven by
// hand (KeepAlive is an hour, so the heartbeat goroutine never ticks): a
// HEARTBEAT goes out at every checksPerBeat-th check that found nothing
// written, and the connection is aborted with ErrNoHeartbeat at the
// silentBeats*checksPerBeat-th check in a row that found nothing read, not
// one sooner. A check that finds bytes read, or reading stalled (for any
// of its reasons), starts the count again. With a check every
// KeepAlive/checksPerBeat, the drop thus comes 4 to 4.25 KeepAlive periods
// after the last byte heard.
//
// It runs on each stream of a mesh's link (a data stream and the control
// stream are watched alike), and on a star's, whose coordinator holds a
// worker back while the frames it forwards wait to be written on.
func TestCheckLiveCounts(t *testing.T) {
	opts := Options{KeepAlive: time.Hour, Logger: slog.New(slog.DiscardHandler)}
	for _, n := range []lane{laneData, laneCtl} {
		t.Run("mesh "+n.String(), func(t *testing.T) {
			ts := pair(t, opts)
			l := ts[0].peer(1).link.(*meshLink)
			i := int(n)
			if n == laneCtl {
				i = l.streams
			}
			check := func() { l.live.check(l.p, l.conn(n), &l.watch[i], n.String(), false, time.Now()) }
			poke := func() error { return ts[1].Send(0, 1, []byte("alive")) } // on data stream 0
			if n == laneCtl {
				poke = func() error { return ts[1].postService(0, plumb.ServiceFrame{Reply: true}, []byte("alive")) }
			}
			if n == laneData {
				// Nothing comes on a data stream by itself: a message each
				// way, whole before the first check.
				if err := poke(); err != nil {
					t.Fatal(err)
				}
				if err := ts[0].Send(1, 1, []byte("alive")); err != nil {
					t.Fatal(err)
				}
				for l.conn(n).BytesRead() < frame.HeaderSize+5 {
					time.Sleep(time.Millisecond)
				}
			}
			checkLiveCounts(t, ts, l.conn(n), nil, check, poke)
		})
	}
	t.Run("star", func(t *testing.T) {
		ts := starPair(t, opts)
		l := ts[0].peer(1).link.(*streamLink)
		check := func() { l.checkLive(time.Now()) }
		poke := func() error { return ts[1].postService(0, plumb.ServiceFrame{Reply: true}, []byte("alive")) }
		checkLiveCounts(t, ts, l.conn, &l.fwd, check, poke)
	})
}

// checkLiveCounts is TestCheckLiveCounts on the link from ts[0] to ts[1],
// watched on c, which check checks and poke has ts[1] send a frame on;
// fwd, if not nil, is the link's forwarding backlog.
func checkLiveCounts(t *testing.T, ts []*NetTransport, c *ioloop.Conn, fwd *fwdCounter, check func(), poke func() error) {
	silent := func(n int) { // n checks that find nothing read, each required not to drop
		t.Helper()
		for i := range n {
			check()
			if err := c.Err(); err != nil {
				t.Fatalf("dropped at silent check %d: %v", i+1, err)
			}
		}
	}
	// Heartbeats: one per checksPerBeat checks that wrote nothing. (The
	// handshake does not go through the connection's counts, but each
	// side's first CREDIT does: one check takes it in.)
	for c.BytesRead() == 0 {
		time.Sleep(time.Millisecond)
	}
	check()
	w := c.BytesWritten()
	silent(checksPerBeat - 1)
	if c.BytesWritten() != w {
		t.Fatalf("a heartbeat before %d idle checks", checksPerBeat)
	}
	silent(1)
	if got := c.BytesWritten() - w; got != frame.HeaderSize {
		t.Fatalf("after %d idle checks: wrote %d bytes, want one heartbeat (%d)", checksPerBeat, got, frame.HeaderSize)
	}

	// Bytes heard start the count again.
	silent(silentBeats*checksPerBeat - 1 - checksPerBeat)
	read := c.BytesRead()
	if err := poke(); err != nil {
		t.Fatal(err)
	}
	for c.BytesRead() == read {
		time.Sleep(time.Millisecond)
	}
	silent(silentBeats*checksPerBeat - 1)

	// So does reading stalled, for as long as it lasts, whatever stalls it.
	type stall struct {
		why string
		set func(on bool)
	}
	var stalls []stall
	if fwd != nil {
		stalls = append(stalls, stall{"coordinator holding the peer back", func(on bool) { fwd.paused = on }})
	}
	for _, st := range stalls {
		fwd.mu.Lock()
		st.set(true)
		fwd.mu.Unlock()
		for i := range 2 * silentBeats * checksPerBeat {
			check()
			if err := c.Err(); err != nil {
				t.Fatalf("%s: dropped at check %d: %v", st.why, i+1, err)
			}
		}
		fwd.mu.Lock()
		st.set(false)
		fwd.mu.Unlock()
		silent(silentBeats*checksPerBeat - 1) // the stall started the count again
	}
	if len(stalls) == 0 {
		silent(1) // the first check after the bytes heard started the count: 15 silent now
	}
	check()
	if err := c.Err(); !errors.Is(err, ErrNoHeartbeat) {
		t.Fatalf("after %d silent checks: %v, want ErrNoHeartbeat", silentBeats*checksPerBeat, err)
	}
	if err := ts[0].Send(1, 1, nil); !errors.Is(err, ErrPeerLost) || !errors.Is(err, ErrNoHeartbeat) {
		t.Fatalf("send after the drop: %v, want ErrPeerLost with cause ErrNoHeartbeat", err)
	}
}

// starPair builds a two-rank star on loopback (coordinator and one
// worker), closed at cleanup.
func starPair(t *testing.T, opts Options) []*NetTransport {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ts := make([]*NetTransport, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	wg.Go(func() { ts[0], errs[0] = CoordinatorListen(2, ln, opts) })
	wg.Go(func() { ts[1], errs[1] = WorkerDial(1, 2, ln.Addr().String(), opts) })
	wg.Wait()
	for r, tr := range ts {
		if tr != nil {
			t.Cleanup(func() { tr.Close() })
		}
		if errs[r] != nil {
			t.Fatalf("rank %d: %v", r, errs[r])
		}
	}
	return ts
}

// pair builds a two-rank mesh on loopback, closed at cleanup.
func pair(t testing.TB, opts Options) []*NetTransport {
	t.Helper()
	lns := make([]net.Listener, 2)
	addrs := make([]string, 2)
	for r := range lns {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns[r], addrs[r] = ln, ln.Addr().String()
	}
	ts := make([]*NetTransport, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for r := range ts {
		wg.Go(func() { ts[r], errs[r] = FromListener(r, 2, lns[r], addrs, opts) })
	}
	wg.Wait()
	for _, tr := range ts {
		if tr != nil {
			t.Cleanup(func() { tr.Close() })
		}
	}
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	return ts
}

// TestCheckLiveEveryStream: a mesh link's check looks at each of its
// streams, data streams and control stream alike: each that wrote nothing
// sends its own HEARTBEAT, and one that brings nothing drops the link
// while the others bring bytes, the error naming it.
func TestCheckLiveEveryStream(t *testing.T) {
	opts := Options{KeepAlive: time.Hour, SharedMemory: SharedMemoryOff, Streams: 2, Logger: slog.New(slog.DiscardHandler)}
	ts := pair(t, opts)
	l := ts[0].peer(1).link.(*meshLink)
	streams := []*ioloop.Conn{l.conn(0), l.conn(1), l.conn(laneCtl)}
	for streams[2].BytesRead() == 0 { // the first CREDIT
		time.Sleep(time.Millisecond)
	}
	l.checkLive(time.Now())
	written := make([]uint64, len(streams))
	for i, c := range streams {
		written[i] = c.BytesWritten()
	}
	for range checksPerBeat {
		l.checkLive(time.Now())
	}
	for i, c := range streams {
		if got := c.BytesWritten() - written[i]; got != frame.HeaderSize {
			t.Fatalf("stream %d wrote %d bytes in %d idle checks, want one heartbeat", i, got, checksPerBeat)
		}
	}
	// ts[1]'s heartbeats keep every stream but data stream 1 heard.
	r := ts[1].peer(0).link.(*meshLink)
	for i := 0; streams[1].Err() == nil; i++ {
		if i > silentBeats*checksPerBeat {
			t.Fatalf("data stream 1 silent for %d checks, not dropped", i)
		}
		for j, c := range []*ioloop.Conn{r.conn(0), r.conn(laneCtl)} {
			in := streams[2*j]
			read := in.BytesRead()
			h := frame.Header{Kind: frame.KindHeartbeat, Src: 1}
			if err := c.Send(&h, nil); err != nil {
				t.Fatal(err)
			}
			for in.BytesRead() == read {
				time.Sleep(time.Millisecond)
			}
		}
		l.checkLive(time.Now())
	}
	err := ts[0].Send(1, 1, nil)
	var se *SilenceError
	if !errors.Is(err, ErrPeerLost) || !errors.As(err, &se) || se.Stream != "data stream 1" {
		t.Fatalf("send after the drop: %v, want ErrPeerLost for the silence of data stream 1", err)
	}
}

// TestCheckLiveSparesStoppedDataStream: rank 0 leaves a large SEND of
// rank 1 in data stream 0 for its receive (deferred), so it reads nothing
// more there; rank 1 goes on posting short frames on that stream until
// they fill its socket and its own reading of the stream stops
// (ioloop.Options.MaxPosted). Neither rank is silent: both are alive on
// the control stream, and neither drops the other, however long it
// lasts. (Data streams watched alone, rank 1 dropped rank 0 at the 16th
// check.)
func TestCheckLiveSparesStoppedDataStream(t *testing.T) {
	opts := Options{KeepAlive: time.Hour, SharedMemory: SharedMemoryOff, MaxQueuedBytes: 8 << 20, SocketBuffer: 64 << 10, Logger: slog.New(slog.DiscardHandler)}
	ts := pair(t, opts)
	if err := ts[1].Send(0, 1, make([]byte, 64<<10)); err != nil { // deferred at rank 0: no receive
		t.Fatal(err)
	}
	c1 := ts[1].peer(0).link.(*meshLink).conn(laneData)
	for i := 0; !c1.Stopped(); i++ {
		if i > 1<<20 {
			t.Fatal("rank 1's data stream never stopped reading")
		}
		if err := ts[1].postOwned(0, 1, 0, make([]byte, 64)); err != nil {
			if errors.Is(err, ErrNoCredit) {
				t.Skip("rank 1 ran out of credit before its stream stopped: nothing to check")
			}
			t.Fatal(err)
		}
	}
	for i := range 2 * silentBeats * checksPerBeat {
		for r, tr := range ts {
			tr.peer(1 - r).link.checkLive(time.Now())
			if err := PeerLost(tr, 1-r); err != nil {
				t.Fatalf("check %d: rank %d dropped rank %d: %v", i, r, 1-r, err)
			}
		}
		for r, tr := range ts { // each is alive on the control stream
			h := frame.Header{Kind: frame.KindHeartbeat, Src: uint32(r)}
			tr.peer(1-r).link.(*meshLink).conn(laneCtl).Post(&h, nil, false)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestDropFault: the faults a rank's last word names, and the ends it
// says none for.
func TestDropFault(t *testing.T) {
	connErr := func(op string, err error) error { return &ioloop.ConnError{Op: op, Err: err} }
	for _, tc := range []struct {
		name string
		err  error
		want uint32
	}{
		{"tampered", connErr("read", &sealed.TamperError{Why: "it does not authenticate"}), frame.DropTampered},
		{"cut short: maybe the peer's own end", connErr("read", &sealed.TamperError{Why: "the stream ends inside it", Cut: true}), 0},
		{"silent", &SilenceError{Stream: "data stream 0"}, frame.DropSilent},
		{"a breach", connErr("abort", fmt.Errorf("%w: a CTS for nothing", ErrProtocol)), frame.DropProtocol},
		{"undecodable", connErr("decode", ioloop.ErrProtocol), frame.DropProtocol},
		{"over credit", connErr("abort", ErrFlowControl), frame.DropFlowControl},
		{"the peer's own word", connErr("abort", &DroppedError{Err: ErrTampered}), 0},
		{"the peer's end", connErr("read", ioloop.ErrEOF), 0},
		{"closed here", connErr("close", ErrClosed), 0},
	} {
		if got := dropFault(tc.err); got != tc.want {
			t.Errorf("%s: dropFault %d, want %d", tc.name, got, tc.want)
		}
	}
}
