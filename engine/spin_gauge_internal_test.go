package engine

import (
	"bytes"
	"encoding/binary"
	"syscall"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/internal/spin"
)

// TestSpinGaugeAdapts: receives from a peer that answers only after
// longer than Options.Spin soon spin only spin.Floor, and spin the full
// budget again once its answers come quickly.
func TestSpinGaugeAdapts(t *testing.T) {
	const full = 5 * time.Millisecond
	ts := pair(t, Options{Spin: full})
	slow := make(chan time.Duration)
	go echo(ts[1], slow)
	defer close(slow)
	g := &ts[0].peer(1).spin
	roundTrip := func(i int, delay time.Duration) {
		t.Helper()
		slow <- delay
		var out, in [8]byte
		binary.LittleEndian.PutUint64(out[:], uint64(i))
		if err := ts[0].Send(1, 3, out[:]); err != nil {
			t.Fatal(err)
		}
		if n, err := ts[0].RecvInto(1, 4, in[:]); err != nil || n != 8 || in != out {
			t.Fatalf("round trip %d: %d bytes %x, %v", i, n, in[:n], err)
		}
	}
	for i := range 12 {
		roundTrip(i, 4*full)
	}
	if got := g.Budget(full); got != spin.Floor {
		t.Fatalf("after 12 answers 4 spins late: budget %v, want spin.Floor", got)
	}
	for i := range 10 {
		roundTrip(i, 0)
	}
	if got := g.Budget(full); got != full {
		t.Fatalf("after 10 quick answers: budget %v, want %v", got, full)
	}
}

// echo answers each message tr gets from rank 0 on tag 3 on tag 4, after
// the delay it reads from delays first, until delays closes.
func echo(tr *NetTransport, delays <-chan time.Duration) {
	var buf [8]byte
	for d := range delays {
		n, err := tr.RecvInto(0, 3, buf[:])
		if err != nil {
			return
		}
		time.Sleep(d)
		if tr.Send(0, 4, buf[:n]) != nil {
			return
		}
	}
}

// BenchmarkSlowPeer measures what waiting for a peer that answers 1 ms
// late costs this process's CPU (cpu-us/op: user and system time over
// the round trips, both ranks in this process), with the adaptive spin
// (gauge=adaptive) and with every wait spinning the full Options.Spin
// (gauge=fixed: the gauge reset before each round trip), and with no
// spinning at all (gauge=nospin, Options.Spin -1), the floor.
func BenchmarkSlowPeer(b *testing.B) {
	for _, mode := range []string{"adaptive", "fixed", "nospin"} {
		b.Run("gauge="+mode, func(b *testing.B) {
			fixed, opts := mode == "fixed", Options{}
			if mode == "nospin" {
				opts.Spin = -1
			}
			ts := pair(b, opts)
			slow := make(chan time.Duration)
			go echo(ts[1], slow)
			defer close(slow)
			g := &ts[0].peer(1).spin
			var out, in [8]byte
			b.SetBytes(2 * int64(len(out)))
			b.ReportAllocs()
			cpu0 := cpuTime(b)
			b.ResetTimer()
			for i := range b.N {
				if fixed {
					g.Reset()
				}
				slow <- time.Millisecond
				binary.LittleEndian.PutUint64(out[:], uint64(i))
				if err := ts[0].Send(1, 3, out[:]); err != nil {
					b.Fatal(err)
				}
				if n, err := ts[0].RecvInto(1, 4, in[:]); err != nil || n != 8 || !bytes.Equal(in[:], out[:]) {
					b.Fatalf("round trip %d: %d bytes %x, %v", i, n, in[:n], err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(time.Microsecond)/float64(b.N), "cpu-us/op")
		})
	}
}

// cpuTime is the user and system time this process has used.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
