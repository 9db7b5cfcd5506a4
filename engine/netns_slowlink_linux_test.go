package engine_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/engine"
)

// The slow-link test: two ranks in their own namespaces, every packet each
// sends rate-limited by tc tbf to 1 Mbit/s, exchange data both ways with
// the default KeepAlive for slowLinkFor. The receiver of the main stream
// takes nothing for slowStall at a time, longer than the silence that loses
// a peer, so its reading stops (backpressure) and the sender is held back;
// the other stream's frames each take longer than that silence to cross
// the link. Nobody may be dropped, and every byte must arrive.
const (
	slowLinkEnv  = "BOLTMESH_SLOWLINK_FOR" // a duration: run that long instead of slowLinkFor
	slowLinkFor  = 25 * time.Second
	slowRate     = "1mbit"
	slowRecv     = 3 * time.Second // the receiver takes messages this long,
	slowStall    = 9 * time.Second // then nothing this long (its queue fills in 1 s, then 4.25 KeepAlive periods and a margin)
	slowDataTag  = 11              // rank 0 to rank 1: slowSize messages, then an empty one
	slowBackTag  = 12              // rank 1 to rank 0: slowBackSize messages, then an empty one
	slowBackSize = 1 << 20         // 8.4 s at 1 Mbit/s: longer than 4 KeepAlive periods
)

// slowOpts are the ranks' options: the default KeepAlive, and a small
// queue of unexpected messages and small socket buffers, so that a stalled
// receiver holds its sender back within a second or two.
var slowOpts = engine.Options{MaxQueuedBytes: 64 << 10, SocketBuffer: 128 << 10}

// slowSize is the size of message i of the main stream: small ones that
// queue at the receiver and large ones that wait in the socket for their
// receive.
func slowSize(i int) int {
	return [...]int{512, 4 << 10, 16 << 10, 40 << 10, 96 << 10, 200 << 10}[i%6]
}

// TestNetnsSlowLink checks that a live peer is never dropped, however slow
// its link and however long backpressure holds it: see slowLinkFor. It
// runs for slowLinkFor; set BOLTMESH_SLOWLINK_FOR (e.g. 2m) to run longer.
func TestNetnsSlowLink(t *testing.T) {
	dur := slowLinkFor
	if v := os.Getenv(slowLinkEnv); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			t.Fatalf("%s=%q: want a positive duration", slowLinkEnv, v)
		}
		dur = d
	}
	requireNetns(t, fmt.Sprintf("sends over a %s link for %v", slowRate, dur), "ip", "tc")
	l := newNetnsLab(t, 2)
	for r := range 2 {
		args := []string{"netns", "exec", l.ns[r], "tc", "qdisc", "add", "dev", l.rankSide[r], "root", "tbf", "rate", slowRate, "burst", "10kb", "latency", "70ms"}
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	reports := make(chan netnsReport, 8)
	children := make([]*netnsChild, 2)
	start := time.Now()
	for r := range 2 {
		children[r] = startNetnsChild(t, l, netnsRole{script: "slowlink", rank: r, dur: dur}, reports)
	}
	deadline := time.After(dur + 2*time.Minute)
	for range 2 {
		select {
		case r := <-reports:
			if r.Step != "done" || r.Err != "" {
				t.Fatalf("rank %d: %s: %s", r.Rank, r.Step, r.Err)
			}
			t.Logf("rank %d: received %d messages, %d bytes, checked; longest Send %v", r.Rank, r.Msgs, r.Bytes, r.LongestTx.Round(time.Millisecond))
			if r.Msgs == 0 {
				t.Errorf("rank %d received nothing", r.Rank)
			}
		case <-deadline:
			t.Fatalf("no report after %v", time.Since(start))
		}
	}
	t.Logf("both ranks done after %v over %s", time.Since(start).Round(time.Millisecond), slowRate)
	for _, c := range children {
		select {
		case <-c.done:
			if c.waitErr != nil {
				t.Errorf("rank %d exited: %v", c.rank, c.waitErr)
			}
		case <-deadline:
			t.Fatalf("rank %d did not exit", c.rank)
		}
	}
}

// runSlowLinkChild is a rank of TestNetnsSlowLink: rank 0 sends the main
// stream and receives the other, rank 1 the reverse, for role.dur; then
// both pass a barrier and report "done".
func runSlowLinkChild(role netnsRole, out *netnsOut) error {
	opts := slowOpts
	opts.KeepAlive = role.keepAlive
	tr, err := engine.Bind(role.rank, role.world, role.peers, opts)
	if err != nil {
		return fmt.Errorf("bind: %w", err)
	}
	defer tr.Close()
	deadline := time.Now().Add(role.dur)
	var wg sync.WaitGroup
	var txErr, rxErr error
	var longest time.Duration
	var msgs int
	var bytes int64
	if role.rank == 0 {
		wg.Go(func() { longest, txErr = slowSend(tr, 1, slowDataTag, deadline, slowSize) })
		wg.Go(func() {
			msgs, bytes, rxErr = slowReceive(tr, 0, slowBackTag, func(int) int { return slowBackSize }, time.Time{})
		})
	} else {
		wg.Go(func() { longest, txErr = slowSend(tr, 0, slowBackTag, deadline, func(int) int { return slowBackSize }) })
		wg.Go(func() { msgs, bytes, rxErr = slowReceive(tr, 1, slowDataTag, slowSize, deadline) })
	}
	wg.Wait()
	if err := errors.Join(txErr, rxErr); err != nil {
		return err
	}
	if err := tr.Barrier(); err != nil {
		return fmt.Errorf("barrier: %w", err)
	}
	out.report(netnsReport{Rank: role.rank, Step: "done", Msgs: msgs, Bytes: bytes, LongestTx: longest})
	return nil
}

// slowSend sends messages of size(i) to rank to until deadline, then an
// empty one, and returns its longest wait in one Send.
func slowSend(tr *engine.NetTransport, to, tag int, deadline time.Time, size func(int) int) (time.Duration, error) {
	var longest time.Duration
	for i := 0; time.Now().Before(deadline); i++ {
		msg := pattern(tr.Rank(), to, tag, i, size(i))
		start := time.Now()
		if err := tr.Send(to, tag, msg); err != nil {
			return longest, fmt.Errorf("send %d to rank %d: %w", i, to, err)
		}
		longest = max(longest, time.Since(start))
	}
	if err := tr.Send(to, tag, nil); err != nil {
		return longest, fmt.Errorf("final send to rank %d: %w", to, err)
	}
	return longest, nil
}

// slowReceive receives and checks the messages rank 1-me sends under tag
// until the empty one. Until stallUntil it alternates slowRecv of taking
// messages with slowStall of taking none.
func slowReceive(tr *engine.NetTransport, me, tag int, size func(int) int, stallUntil time.Time) (msgs int, bytes int64, err error) {
	from := 1 - me
	phase := time.Now().Add(slowRecv)
	for {
		if now := time.Now(); now.After(phase) && now.Before(stallUntil) {
			time.Sleep(slowStall)
			phase = time.Now().Add(slowRecv)
		}
		got, err := tr.Recv(from, tag)
		if err != nil {
			return msgs, bytes, fmt.Errorf("recv %d from rank %d: %w", msgs, from, err)
		}
		if len(got) == 0 {
			return msgs, bytes, nil
		}
		if err := check(got, from, me, tag, msgs, size(msgs)); err != nil {
			return msgs, bytes, err
		}
		msgs++
		bytes += int64(len(got))
	}
}
