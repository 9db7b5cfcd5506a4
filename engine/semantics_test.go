package engine_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/engine"
)

// watchedMesh is newMesh with a watchdog.
func watchedMesh(t *testing.T, n int, opts engine.Options) []*engine.NetTransport {
	t.Helper()
	ts := newMesh(t, n, opts)
	watchdog(t, 10*time.Second, ts...)
	return ts
}

// watchdog closes the transports if the test still runs after d, so that a
// receive or barrier that a bug left blocked fails (with ErrClosed) instead
// of hanging the test binary.
func watchdog(t *testing.T, d time.Duration, ts ...*engine.NetTransport) {
	var fired atomic.Bool
	timer := time.AfterFunc(d, func() {
		fired.Store(true)
		for _, tr := range ts {
			tr.Close()
		}
	})
	t.Cleanup(func() {
		if !timer.Stop() && fired.Load() {
			t.Errorf("watchdog: test still running after %v; closed its transports", d)
		}
	})
}

func TestFIFOPerSourceAndTag(t *testing.T) {
	ts := watchedMesh(t, 3, engine.Options{})
	const msgs, max = 20, 64 << 10
	tags := []int{1, 2, 3}
	// Ranks 1 and 2 interleave their tags message by message.
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for _, from := range []int{1, 2} {
		wg.Go(func() {
			for seq := range msgs {
				for _, tag := range tags {
					p := pattern(from, 0, tag, seq, sizeFor(from, 0, tag, seq, max))
					if err := ts[from].Send(0, tag, p); err != nil {
						errs[from] = err
						return
					}
				}
			}
		})
	}
	// Rank 0 takes the streams in another order: tag 3 of rank 2 first,
	// then the rest, so most messages wait queued.
	order := [][2]int{{2, 3}, {1, 3}, {1, 1}, {2, 2}, {2, 1}, {1, 2}}
	buf := make([]byte, max)
	for _, o := range order {
		from, tag := o[0], o[1]
		for seq := range msgs {
			var got []byte
			var err error
			if seq%2 == 0 {
				got, err = ts[0].Recv(from, tag)
			} else {
				var n int
				n, err = ts[0].RecvInto(from, tag, buf)
				got = buf[:n]
			}
			if err == nil {
				err = check(got, from, 0, tag, seq, sizeFor(from, 0, tag, seq, max))
			}
			if err != nil {
				wg.Wait()
				t.Fatalf("from %d tag %d seq %d: %v", from, tag, seq, err)
			}
		}
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
}

func TestSendToSelf(t *testing.T) {
	ts := watchedMesh(t, 2, engine.Options{})
	tr := ts[0]
	const tag = 11

	// Sent before the receive: queued. The sender may reuse its buffer.
	p := pattern(0, 0, tag, 0, 5000)
	if err := tr.Send(0, tag, p); err != nil {
		t.Fatal(err)
	}
	if err := tr.Send(0, tag, pattern(0, 0, tag, 1, 70000)); err != nil {
		t.Fatal(err)
	}
	clear(p)
	got, err := tr.Recv(0, tag)
	if err != nil || check(got, 0, 0, tag, 0, 5000) != nil {
		t.Fatalf("Recv from self: %d bytes, %v", len(got), err)
	}
	buf := make([]byte, 1<<17)
	n, err := tr.RecvInto(0, tag, buf)
	if err != nil || check(buf[:n], 0, 0, tag, 1, 70000) != nil {
		t.Fatalf("RecvInto from self: %d bytes, %v", n, err)
	}

	// Receives posted before the send.
	for i, into := range []bool{false, true} {
		seq := 2 + i
		done := make(chan error, 1)
		go func() {
			if into {
				n, err := tr.RecvInto(0, tag, buf)
				if err == nil {
					err = check(buf[:n], 0, 0, tag, seq, 3000)
				}
				done <- err
				return
			}
			got, err := tr.Recv(0, tag)
			if err == nil {
				err = check(got, 0, 0, tag, seq, 3000)
			}
			done <- err
		}()
		time.Sleep(20 * time.Millisecond)
		if err := tr.Send(0, tag, pattern(0, 0, tag, seq, 3000)); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("receive posted before the send (into=%v): %v", into, err)
			}
		case <-time.After(2 * time.Second):
			tr.Close() // unblocks the receive
			<-done
			t.Fatalf("receive posted before the send (into=%v) never completed", into)
		}
	}

	// Self messages do not mix with the peer's on the same tag.
	if err := ts[1].Send(0, tag, []byte("peer")); err != nil {
		t.Fatal(err)
	}
	if err := tr.Send(0, tag, []byte("self")); err != nil {
		t.Fatal(err)
	}
	requireRecv(t, tr, 0, tag, []byte("self"))
	requireRecv(t, tr, 1, tag, []byte("peer"))
}

func TestReservedTags(t *testing.T) {
	ts := watchedMesh(t, 2, engine.Options{})
	tr := ts[0]
	ctx := context.Background()
	buf := make([]byte, 16)
	for _, tag := range []int{engine.TagReservedBase, engine.TagReservedBase + 0x100, 1 << 40, -1, -engine.TagReservedBase} {
		for _, to := range []int{0, 1} {
			ops := map[string]error{
				"Send":        tr.Send(to, tag, []byte("x")),
				"SendContext": tr.SendContext(ctx, to, tag, []byte("x")),
			}
			_, ops["Recv"] = tr.Recv(to, tag)
			_, ops["RecvInto"] = tr.RecvInto(to, tag, buf)
			_, ops["RecvTimeout"] = tr.RecvTimeout(to, tag, time.Second)
			_, ops["RecvContext"] = tr.RecvContext(ctx, to, tag)
			_, ops["RecvIntoContext"] = tr.RecvIntoContext(ctx, to, tag, buf)
			for op, err := range ops {
				if !errors.Is(err, engine.ErrReservedTag) {
					t.Errorf("%s(rank %d, tag %d): got %v, want ErrReservedTag", op, to, tag, err)
				}
			}
		}
	}
	// The last user tag works.
	const last = engine.TagReservedBase - 1
	if err := ts[1].Send(0, last, []byte("last")); err != nil {
		t.Fatal(err)
	}
	requireRecv(t, tr, 1, last, []byte("last"))
}

func TestUnknownRank(t *testing.T) {
	ts := watchedMesh(t, 2, engine.Options{})
	tr := ts[0]
	ctx := context.Background()
	buf := make([]byte, 16)
	for _, rank := range []int{2, 3, -1, 1 << 30} {
		ops := map[string]error{
			"Send":        tr.Send(rank, 1, []byte("x")),
			"SendContext": tr.SendContext(ctx, rank, 1, []byte("x")),
		}
		_, ops["Recv"] = tr.Recv(rank, 1)
		_, ops["RecvInto"] = tr.RecvInto(rank, 1, buf)
		_, ops["RecvTimeout"] = tr.RecvTimeout(rank, 1, time.Second)
		_, ops["RecvContext"] = tr.RecvContext(ctx, rank, 1)
		_, ops["RecvIntoContext"] = tr.RecvIntoContext(ctx, rank, 1, buf)
		for op, err := range ops {
			requireUnknownRank(t, op, err, rank, 2)
		}
	}
}

func requireUnknownRank(t *testing.T, what string, err error, rank, world int) {
	t.Helper()
	var ue *engine.UnknownRankError
	if !errors.As(err, &ue) || !errors.Is(err, engine.ErrUnknownRank) {
		t.Errorf("%s: got %v, want an *UnknownRankError", what, err)
		return
	}
	if ue.Rank != rank || ue.NumRanks != world {
		t.Errorf("%s: got Rank %d NumRanks %d, want %d and %d", what, ue.Rank, ue.NumRanks, rank, world)
	}
}

func TestRecvIntoTruncated(t *testing.T) {
	ts := watchedMesh(t, 2, engine.Options{})
	const tag, size = 6, 100 << 10
	small := make([]byte, 1000)

	requireTruncated := func(what string, err error, from int) {
		t.Helper()
		var te *engine.TruncatedError
		if !errors.As(err, &te) || !errors.Is(err, engine.ErrTruncated) {
			t.Fatalf("%s: got %v, want a *TruncatedError", what, err)
		}
		if te.Len != size || te.Cap != len(small) || te.From != from || te.Tag != tag {
			t.Fatalf("%s: got %+v, want Len %d Cap %d From %d Tag %d", what, te, size, len(small), from, tag)
		}
	}

	for _, from := range []int{1, 0} { // the peer, and this rank itself
		// Queued first, then received into a small buffer.
		if err := ts[from].Send(0, tag, pattern(from, 0, tag, 0, size)); err != nil {
			t.Fatal(err)
		}
		if err := ts[from].Send(0, tag+1, nil); err != nil { // the first one is queued once this arrived
			t.Fatal(err)
		}
		requireRecv(t, ts[0], from, tag+1, nil)
		n, err := ts[0].RecvInto(from, tag, small)
		requireTruncated("RecvInto of a queued message", err, from)
		if n != 0 {
			t.Errorf("truncated RecvInto returned n=%d", n)
		}
		// It is not lost.
		got, err := ts[0].Recv(from, tag)
		if err != nil || check(got, from, 0, tag, 0, size) != nil {
			t.Fatalf("message after a truncated RecvInto: %d bytes, %v", len(got), err)
		}

		// Posted first, then the message arrives.
		done := make(chan error, 1)
		go func() {
			_, err := ts[0].RecvInto(from, tag, small)
			done <- err
		}()
		time.Sleep(20 * time.Millisecond)
		if err := ts[from].Send(0, tag, pattern(from, 0, tag, 1, size)); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-done:
			requireTruncated("RecvInto posted before the message", err, from)
		case <-time.After(2 * time.Second):
			ts[0].Close()
			<-done
			t.Fatal("RecvInto with a small buffer never completed")
		}
		big := make([]byte, size)
		n, err = ts[0].RecvInto(from, tag, big)
		if err != nil || check(big[:n], from, 0, tag, 1, size) != nil {
			t.Fatalf("message after a truncated posted RecvInto: %d bytes, %v", n, err)
		}
	}
}

func TestZeroLengthMessage(t *testing.T) {
	ts := watchedMesh(t, 2, engine.Options{})
	const tag = 8
	for _, from := range []int{1, 0} {
		for _, p := range [][]byte{nil, {}} {
			if err := ts[from].Send(0, tag, p); err != nil {
				t.Fatal(err)
			}
		}
		if err := ts[from].Send(0, tag, []byte("after")); err != nil {
			t.Fatal(err)
		}
		got, err := ts[0].Recv(from, tag)
		if err != nil || len(got) != 0 {
			t.Fatalf("from %d: Recv of an empty message: %q, %v", from, got, err)
		}
		n, err := ts[0].RecvInto(from, tag, nil)
		if err != nil || n != 0 {
			t.Fatalf("from %d: RecvInto(nil) of an empty message: %d, %v", from, n, err)
		}
		requireRecv(t, ts[0], from, tag, []byte("after"))
	}
	// An empty message completes a receive posted before it arrives.
	done := make(chan error, 1)
	go func() {
		n, err := ts[0].RecvInto(1, tag, make([]byte, 10))
		if err == nil && n != 0 {
			err = errors.New("non-empty")
		}
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	if err := ts[1].Send(0, tag, nil); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("posted RecvInto of an empty message: %v", err)
	}
}

func TestCloseUnblocks(t *testing.T) {
	ts := watchedMesh(t, 2, engine.Options{})
	recvDone := make(chan error, 1)
	barrierDone := make(chan error, 1)
	go func() {
		_, err := ts[0].Recv(1, 3)
		recvDone <- err
	}()
	go func() { barrierDone <- ts[0].Barrier() }() // rank 1 never enters it
	time.Sleep(50 * time.Millisecond)
	select {
	case err := <-recvDone:
		t.Fatalf("Recv returned before Close: %v", err)
	case err := <-barrierDone:
		t.Fatalf("Barrier returned before Close: %v", err)
	default:
	}
	if err := ts[0].Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for what, ch := range map[string]chan error{"Recv": recvDone, "Barrier": barrierDone} {
		select {
		case err := <-ch:
			if !errors.Is(err, engine.ErrClosed) {
				t.Errorf("%s blocked at Close: got %v, want ErrClosed", what, err)
			}
		case <-time.After(2 * time.Second):
			t.Fatalf("%s still blocked after Close", what)
		}
	}
	if err := ts[0].Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	// Later operations fail with ErrClosed too.
	if err := ts[0].Send(1, 3, []byte("x")); !errors.Is(err, engine.ErrClosed) {
		t.Errorf("Send after Close: %v", err)
	}
	if err := ts[0].Send(0, 3, []byte("x")); !errors.Is(err, engine.ErrClosed) {
		t.Errorf("Send to self after Close: %v", err)
	}
	if _, err := ts[0].Recv(1, 3); !errors.Is(err, engine.ErrClosed) {
		t.Errorf("Recv after Close: %v", err)
	}
	if err := ts[0].Barrier(); !errors.Is(err, engine.ErrClosed) {
		t.Errorf("Barrier after Close: %v", err)
	}
}

func TestConcurrentSendersOneTag(t *testing.T) {
	ts := watchedMesh(t, 2, engine.Options{})
	const senders, msgs, tag, max = 8, 40, 12, 64 << 10
	// Each message is its sender's id and sequence number, then a pattern.
	var wg sync.WaitGroup
	errs := make(chan error, senders)
	for g := range senders {
		wg.Go(func() {
			for seq := range msgs {
				n := sizeFor(g, 0, tag, seq, max)
				p := make([]byte, 8+n)
				binary.LittleEndian.PutUint32(p, uint32(g))
				binary.LittleEndian.PutUint32(p[4:], uint32(seq))
				fillPattern(p[8:], g, 0, tag, seq)
				if err := ts[1].Send(0, tag, p); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	next := make([]int, senders)
	buf := make([]byte, 8+max)
	for i := range senders * msgs {
		n, err := ts[0].RecvInto(1, tag, buf)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if n < 8 {
			t.Fatalf("message %d: %d bytes", i, n)
		}
		g, seq := int(binary.LittleEndian.Uint32(buf)), int(binary.LittleEndian.Uint32(buf[4:]))
		if g >= senders || seq != next[g] {
			t.Fatalf("message %d: sender %d seq %d, want seq %v", i, g, seq, next)
		}
		if err := check(buf[8:n], g, 0, tag, seq, sizeFor(g, 0, tag, seq, max)); err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		next[g]++
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// requireOptionError checks for an *OptionError naming field.
func requireOptionError(t *testing.T, what string, err error, field string) {
	t.Helper()
	var oe *engine.OptionError
	if !errors.Is(err, engine.ErrOptions) || !errors.As(err, &oe) {
		t.Errorf("%s: got %v, want an *OptionError", what, err)
		return
	}
	if !strings.Contains(oe.Field, field) {
		t.Errorf("%s: OptionError names %q, want %q", what, oe.Field, field)
	}
}

// requireListenerClosed checks that construction closed the listener it
// was given, as FromListener documents.
func requireListenerClosed(t *testing.T, what string, ln net.Listener) {
	t.Helper()
	ln.(*net.TCPListener).SetDeadline(time.Now().Add(time.Second))
	c, err := ln.Accept()
	if err == nil {
		c.Close()
	}
	if !errors.Is(err, net.ErrClosed) {
		t.Errorf("%s: listener still open (Accept: %v)", what, err)
	}
}

func TestInvalidOptions(t *testing.T) {
	cases := []struct {
		name        string
		rank, world int
		peers       int // number of addresses
		opts        engine.Options
		field       string // OptionError field, or "" for an UnknownRankError
	}{
		{"negative MaxQueuedBytes", 0, 2, 2, engine.Options{MaxQueuedBytes: -1}, "MaxQueuedBytes"},
		{"MaxFrame above 2^62", 0, 2, 2, engine.Options{MaxFrame: 1<<62 + 1}, "MaxFrame"},
		{"negative SocketBuffer", 0, 2, 2, engine.Options{SocketBuffer: -1}, "SocketBuffer"},
		{"negative DialTimeout", 0, 2, 2, engine.Options{DialTimeout: -time.Second}, "DialTimeout"},
		{"negative HandshakeTimeout", 0, 2, 2, engine.Options{HandshakeTimeout: -time.Second}, "HandshakeTimeout"},
		{"negative KeepAlive", 0, 2, 2, engine.Options{KeepAlive: -time.Second}, "KeepAlive"},
		{"world 0", 0, 0, 0, engine.Options{}, "world"},
		{"negative world", 0, -1, 0, engine.Options{}, "world"},
		{"fewer peers than ranks", 0, 3, 2, engine.Options{}, "peers"},
		{"more peers than ranks", 0, 2, 3, engine.Options{}, "peers"},
		{"rank equal to world", 2, 2, 2, engine.Options{}, ""},
		{"negative rank", -1, 2, 2, engine.Options{}, ""},
	}
	for _, c := range cases {
		lns, _ := listeners(t, 1)
		peers := make([]string, c.peers)
		for i := range peers {
			peers[i] = "127.0.0.1:1" // never dialed: validation comes first
		}
		start := time.Now()
		tr, err := engine.FromListener(c.rank, c.world, lns[0], peers, c.opts)
		if tr != nil {
			tr.Close()
			t.Errorf("%s: FromListener succeeded", c.name)
			continue
		}
		if el := time.Since(start); el > time.Second {
			t.Errorf("%s: took %v to fail", c.name, el)
		}
		if c.field == "" {
			requireUnknownRank(t, c.name, err, c.rank, c.world)
		} else {
			requireOptionError(t, c.name, err, c.field)
		}
		requireListenerClosed(t, c.name, lns[0])
	}
	// Bind checks the rank against the addresses before listening.
	_, err := engine.Bind(2, 2, []string{"127.0.0.1:0", "127.0.0.1:0"}, engine.Options{})
	requireUnknownRank(t, "Bind rank 2 of 2", err, 2, 2)
	_, err = engine.Bind(-1, 2, []string{"127.0.0.1:0", "127.0.0.1:0"}, engine.Options{})
	requireUnknownRank(t, "Bind rank -1", err, -1, 2)
}

func TestNilListener(t *testing.T) {
	// Ranks 0 and 1 of 3 must accept higher ranks; the addresses are never
	// dialed.
	bogus := []string{"127.0.0.1:1", "127.0.0.1:1", "127.0.0.1:1"}
	for rank := range 2 {
		tr, err := engine.FromListener(rank, 3, nil, bogus, engine.Options{DialTimeout: time.Second})
		if tr != nil {
			tr.Close()
			t.Fatalf("rank %d: FromListener with a nil listener succeeded", rank)
		}
		requireOptionError(t, "nil listener", err, "listener")
	}

	// The highest rank accepts nobody and needs no listener.
	lns, addrs := listeners(t, 2)
	lns[1].Close()
	ts := make([]*engine.NetTransport, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	wg.Go(func() { ts[0], errs[0] = engine.FromListener(0, 2, lns[0], addrs, engine.Options{}) })
	wg.Go(func() { ts[1], errs[1] = engine.FromListener(1, 2, nil, addrs, engine.Options{}) })
	wg.Wait()
	for _, tr := range ts {
		if tr != nil {
			defer tr.Close()
		}
	}
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	watchdog(t, 10*time.Second, ts...)
	if err := ts[1].Send(0, 1, []byte("up")); err != nil {
		t.Fatal(err)
	}
	requireRecv(t, ts[0], 1, 1, []byte("up"))
	if err := ts[0].Send(1, 1, []byte("down")); err != nil {
		t.Fatal(err)
	}
	requireRecv(t, ts[1], 0, 1, []byte("down"))
	barrierAll(t, ts)
}

func TestSingleRankWorld(t *testing.T) {
	tr, err := engine.FromListener(0, 1, nil, []string{"127.0.0.1:1"}, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	watchdog(t, 10*time.Second, tr)
	if tr.Rank() != 0 || tr.WorldSize() != 1 {
		t.Fatalf("rank %d world %d", tr.Rank(), tr.WorldSize())
	}
	const tag = 1
	want := pattern(0, 0, tag, 0, 1<<20)
	if err := tr.Send(0, tag, want); err != nil {
		t.Fatal(err)
	}
	requireRecv(t, tr, 0, tag, want)
	if err := tr.Send(0, tag, want[:100]); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 100)
	if n, err := tr.RecvInto(0, tag, buf); err != nil || !bytes.Equal(buf[:n], want[:100]) {
		t.Fatalf("RecvInto: %d, %v", n, err)
	}
	if _, err := tr.RecvTimeout(0, tag, 20*time.Millisecond); !errors.Is(err, engine.ErrTimeout) {
		t.Fatalf("RecvTimeout with nothing sent: %v", err)
	}
	for range 3 {
		if err := tr.Barrier(); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := tr.BarrierContext(ctx); err != nil {
		t.Fatal(err)
	}
	if err := tr.Send(1, tag, nil); !errors.Is(err, engine.ErrUnknownRank) {
		t.Fatalf("Send to rank 1 of 1: %v", err)
	}
}
