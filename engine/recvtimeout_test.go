package engine_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/engine"
)

// slack bounds how late past its deadline a give-up may return.
const slack = 2 * time.Second

// requireGaveUp checks that an operation started at start that gave up
// after d returned want no sooner than d and not much later.
func requireGaveUp(t *testing.T, what string, err, want error, start time.Time, d time.Duration) {
	t.Helper()
	el := time.Since(start)
	if !errors.Is(err, want) {
		t.Fatalf("%s: got %v, want %v", what, err, want)
	}
	if el < d || el > d+slack {
		t.Errorf("%s: gave up after %v, want %v", what, el, d)
	}
}

// requireRecv receives the next message from rank from under tag within a
// few seconds and compares it with want.
func requireRecv(t *testing.T, tr *engine.NetTransport, from, tag int, want []byte) {
	t.Helper()
	got, err := tr.RecvTimeout(from, tag, 5*time.Second)
	if err != nil {
		t.Fatalf("recv from %d tag %d: %v", from, tag, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("recv from %d tag %d: got %d bytes, want %d (contents differ: %v)", from, tag, len(got), len(want), len(got) == len(want))
	}
}

func TestRecvTimeout(t *testing.T) {
	ts := watchedMesh(t, 2, engine.Options{})
	const tag = 5
	const d = 150 * time.Millisecond

	start := time.Now()
	_, err := ts[0].RecvTimeout(1, tag, d)
	requireGaveUp(t, "RecvTimeout", err, engine.ErrTimeout, start, d)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("RecvTimeout: %v does not match context.DeadlineExceeded", err)
	}
	for range 3 { // given-up receives must not swallow later messages
		start = time.Now()
		_, err := ts[0].RecvTimeout(1, tag, 20*time.Millisecond)
		requireGaveUp(t, "short RecvTimeout", err, engine.ErrTimeout, start, 20*time.Millisecond)
	}

	// Messages sent after the timeouts go to the next receives, in order.
	m1, m2 := pattern(1, 0, tag, 0, 100<<10), pattern(1, 0, tag, 1, 10)
	if err := ts[1].Send(0, tag, m1); err != nil {
		t.Fatal(err)
	}
	if err := ts[1].Send(0, tag, m2); err != nil {
		t.Fatal(err)
	}
	got, err := ts[0].Recv(1, tag)
	if err != nil || check(got, 1, 0, tag, 0, len(m1)) != nil {
		t.Fatalf("first message after the timeouts: %d bytes, %v", len(got), err)
	}
	requireRecv(t, ts[0], 1, tag, m2)

	// A message that arrives while RecvTimeout waits completes it.
	m3 := pattern(1, 0, tag, 2, 1<<20)
	timer := time.AfterFunc(50*time.Millisecond, func() { ts[1].Send(0, tag, m3) })
	defer timer.Stop()
	start = time.Now()
	got, err = ts[0].RecvTimeout(1, tag, 3*time.Second)
	if err != nil || !bytes.Equal(got, m3) {
		t.Fatalf("RecvTimeout while the message arrives: %d bytes, %v", len(got), err)
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Errorf("RecvTimeout returned %v after the message was sent", el)
	}

	// A message already queued is returned at once, even with a deadline
	// too short to wait for anything. m4 has arrived once the later m5 on
	// another tag has (one connection is one ordered stream).
	const other = tag + 1
	m4, m5 := pattern(1, 0, tag, 3, 4096), pattern(1, 0, other, 0, 8)
	if err := ts[1].Send(0, tag, m4); err != nil {
		t.Fatal(err)
	}
	if err := ts[1].Send(0, other, m5); err != nil {
		t.Fatal(err)
	}
	requireRecv(t, ts[0], 1, other, m5)
	got, err = ts[0].RecvTimeout(1, tag, time.Millisecond)
	if err != nil || !bytes.Equal(got, m4) {
		t.Fatalf("RecvTimeout of a queued message: %d bytes, %v", len(got), err)
	}
	// The same for a message this rank sent itself.
	if err := ts[0].Send(0, tag, m5); err != nil {
		t.Fatal(err)
	}
	got, err = ts[0].RecvTimeout(0, tag, time.Millisecond)
	if err != nil || !bytes.Equal(got, m5) {
		t.Fatalf("RecvTimeout of a queued message from self: %q, %v", got, err)
	}
}

func TestRecvContext(t *testing.T) {
	ts := watchedMesh(t, 2, engine.Options{})
	const tag = 9

	// A context cancelled beforehand: nothing is received, not even a
	// queued message, which stays for the next receive.
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ts[0].RecvContext(cancelled, 1, tag); !errors.Is(err, context.Canceled) {
		t.Fatalf("RecvContext with a cancelled context: got %v, want context.Canceled", err)
	}
	if _, err := ts[0].RecvIntoContext(cancelled, 1, tag, make([]byte, 8)); !errors.Is(err, context.Canceled) {
		t.Fatalf("RecvIntoContext with a cancelled context: got %v, want context.Canceled", err)
	}
	m0 := pattern(1, 0, tag, 0, 1000)
	if err := ts[1].Send(0, tag, m0); err != nil {
		t.Fatal(err)
	}
	if err := ts[1].Send(0, tag+1, nil); err != nil { // m0 is queued once this arrived
		t.Fatal(err)
	}
	requireRecv(t, ts[0], 1, tag+1, nil)
	if _, err := ts[0].RecvContext(cancelled, 1, tag); !errors.Is(err, context.Canceled) {
		t.Fatalf("RecvContext with a cancelled context and a queued message: got %v", err)
	}
	requireRecv(t, ts[0], 1, tag, m0)

	// Cancelled while blocked.
	ctx, cancel := context.WithCancel(context.Background())
	start := time.Now()
	timer := time.AfterFunc(100*time.Millisecond, cancel)
	defer timer.Stop()
	_, err := ts[0].RecvContext(ctx, 1, tag)
	requireGaveUp(t, "RecvContext cancelled while blocked", err, context.Canceled, start, 100*time.Millisecond)

	// The next message goes to the next receive.
	m1 := pattern(1, 0, tag, 1, 300<<10)
	if err := ts[1].Send(0, tag, m1); err != nil {
		t.Fatal(err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	got, err := ts[0].RecvContext(ctx, 1, tag)
	if err != nil || !bytes.Equal(got, m1) {
		t.Fatalf("RecvContext after a cancelled one: %d bytes, %v", len(got), err)
	}
}

func TestRecvIntoContextDeadline(t *testing.T) {
	ts := watchedMesh(t, 2, engine.Options{})
	const tag = 4
	const d = 150 * time.Millisecond
	buf := make([]byte, 1<<20)

	start := time.Now() // before the deadline is set
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	n, err := ts[0].RecvIntoContext(ctx, 1, tag, buf)
	requireGaveUp(t, "RecvIntoContext", err, context.DeadlineExceeded, start, d)
	if n != 0 {
		t.Errorf("RecvIntoContext gave up with n=%d", n)
	}

	m := pattern(1, 0, tag, 0, 700<<10)
	if err := ts[1].Send(0, tag, m); err != nil {
		t.Fatal(err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	n, err = ts[0].RecvIntoContext(ctx, 1, tag, buf)
	if err != nil || check(buf[:n], 1, 0, tag, 0, len(m)) != nil {
		t.Fatalf("RecvIntoContext after a deadline: n=%d, %v", n, err)
	}
}

func TestSendContextCancelled(t *testing.T) {
	ts := watchedMesh(t, 2, engine.Options{})
	const tag = 2
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for to := range 2 { // to the peer and to this rank itself
		if err := ts[0].SendContext(ctx, to, tag, []byte("dropped")); !errors.Is(err, context.Canceled) {
			t.Fatalf("SendContext to %d with a cancelled context: got %v, want context.Canceled", to, err)
		}
	}
	// The dropped messages never arrive: the next ones are first in line.
	for to := range 2 {
		if err := ts[0].Send(to, tag, []byte("kept")); err != nil {
			t.Fatal(err)
		}
		requireRecv(t, ts[to], 0, tag, []byte("kept"))
		if got, err := ts[to].RecvTimeout(0, tag, 50*time.Millisecond); !errors.Is(err, engine.ErrTimeout) {
			t.Fatalf("rank %d received %q, %v after the kept message", to, got, err)
		}
	}
}

func TestBarrierContextDeadline(t *testing.T) {
	for _, c := range []struct {
		name   string
		world  int
		gaveUp []int // ranks that enter a barrier and give up; the others never enter
	}{
		{"2 ranks, one gives up", 2, []int{0}},
		{"3 ranks, two give up", 3, []int{0, 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			barrierGiveUpResume(t, watchedMesh(t, c.world, engine.Options{}), c.gaveUp)
		})
	}
}

// barrierGiveUpResume has the ranks gaveUp of ts enter a barrier with a
// deadline of 150 ms that the others never enter, checks that they give
// up then, and then that three barriers on every rank complete: the
// signals of the given-up barrier must not throw the ranks out of step.
func barrierGiveUpResume(t *testing.T, ts []*engine.NetTransport, gaveUp []int) {
	t.Helper()
	const d = 150 * time.Millisecond
	errc := make(chan error, len(ts))
	start := time.Now()
	for _, r := range gaveUp {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), d)
			defer cancel()
			errc <- ts[r].BarrierContext(ctx)
		}()
	}
	for range gaveUp {
		requireGaveUp(t, "BarrierContext", <-errc, context.DeadlineExceeded, start, d)
	}
	for i := range 3 {
		for _, tr := range ts {
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				errc <- tr.BarrierContext(ctx)
			}()
		}
		for range ts {
			if err := <-errc; err != nil {
				t.Fatalf("barrier %d after the given-up one: %v", i, err)
			}
		}
	}
}
