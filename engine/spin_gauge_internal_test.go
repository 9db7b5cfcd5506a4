package engine

import (
	"bytes"
	"encoding/binary"
	"syscall"
	"testing"
	"time"
)

// TestSpinGauge: waits spin the full budget until most recent ones
// outlast it (11 long waits in a row from none), then spinFloor, and the
// full budget again after 3 short ones; a budget at or below spinFloor is
// never cut.
func TestSpinGauge(t *testing.T) {
	const full = time.Millisecond
	var g spinGauge
	for i := 1; i <= 11; i++ {
		if got := g.budget(full); got != full {
			t.Fatalf("after %d long waits: budget %v, want %v", i-1, got, full)
		}
		g.note(true)
	}
	if got := g.budget(full); got != spinFloor {
		t.Fatalf("after 11 long waits: budget %v, want spinFloor", got)
	}
	if got := g.budget(spinFloor / 2); got != spinFloor/2 {
		t.Errorf("budget of a spin under the floor: %v, want it unchanged", got)
	}
	for range 50 {
		g.note(true)
	}
	if v := g.long.Load(); v > gaugeOne {
		t.Errorf("gauge %d after only long waits, above %d", v, gaugeOne)
	}
	for i := 1; i <= 3; i++ {
		if got := g.budget(full); got != spinFloor {
			t.Fatalf("after %d short waits: budget %v, want spinFloor still", i-1, got)
		}
		g.note(false)
	}
	if got := g.budget(full); got != full {
		t.Fatalf("after 3 short waits: budget %v, want %v", got, full)
	}
	g.slept(spinFloor, time.Now().Add(-2*full), full) // spun and slept longer than full
	g.slept(spinFloor, time.Now(), full)              // slept briefly: short
	v := g.long.Load()
	if v == 0 || v > gaugeHigh {
		t.Errorf("gauge %d after a long and a short sleep", v)
	}
	g.slept(0, time.Now().Add(-time.Second), -1) // no spinning: nothing to learn
	if got := g.long.Load(); got != v {
		t.Errorf("a sleep with spinning off moved the gauge from %d to %d", v, got)
	}
}

// TestSpinGaugeAdapts: receives from a peer that answers only after
// longer than Options.Spin soon spin only spinFloor, and spin the full
// budget again once its answers come quickly.
func TestSpinGaugeAdapts(t *testing.T) {
	const spin = 5 * time.Millisecond
	ts := pair(t, Options{Spin: spin})
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
		roundTrip(i, 4*spin)
	}
	if got := g.budget(spin); got != spinFloor {
		t.Fatalf("after 12 answers 4 spins late: budget %v, want spinFloor", got)
	}
	for i := range 10 {
		roundTrip(i, 0)
	}
	if got := g.budget(spin); got != spin {
		t.Fatalf("after 10 quick answers: budget %v, want %v", got, spin)
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
					g.long.Store(0)
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

// TestYieldCadence: a spin on sockets yields at every 8th poll from the
// first, so that within a TCP wait of some 10-15 polls a goroutine of this
// process waiting for the spinner's P gets to run; one on pipes, whose
// small messages come within a microsecond or two, only every spinYield.
// Before, sockets waited for spinYield too, which put the TCP ping-pong's
// mean up 15-25% and its p99 20-40% in one process (bench/RESULTS.md,
// 2026-12-04 21:00).
func TestYieldCadence(t *testing.T) {
	for _, tc := range []struct {
		cheap       bool
		el, yielded time.Duration
		want        bool
	}{
		{false, 0, 0, true},
		{false, time.Microsecond, 0, true},
		{true, 0, 0, false},
		{true, spinYield - 1, 0, false},
		{true, spinYield, 0, true},
		{true, 2*spinYield - 1, spinYield, false},
	} {
		if got := yieldDue(tc.cheap, tc.el, tc.yielded); got != tc.want {
			t.Errorf("yieldDue(cheap %v, %v, %v) = %v, want %v", tc.cheap, tc.el, tc.yielded, got, tc.want)
		}
	}
}
