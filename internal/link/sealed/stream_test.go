package sealed_test

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/boltmesh/boltmesh/internal/link/sealed"
	"github.com/boltmesh/boltmesh/internal/looptest"
	"github.com/boltmesh/boltmesh/ioloop"
	"golang.org/x/sys/unix"
)

// writes are the Writev vectors the round trips send: small frames
// coalesced, a header and its payload, payloads past a record and past
// a Writev's budget.
func writes() [][][]byte {
	var out [][][]byte
	seed := uint64(0)
	cut := func(n int) []byte { seed++; return looptest.Patterned(seed, n) }
	for _, sizes := range [][]int{
		{32}, {32, 8}, {32, 8, 32, 8, 32, 1000}, {32, 65536}, {32, 65535},
		{1}, {32, 1 << 20}, {3 << 20}, {65536}, {65537}, {32, 100, 32, 300000, 32, 5},
	} {
		var v [][]byte
		for _, n := range sizes {
			v = append(v, cut(n))
		}
		out = append(out, v)
	}
	return out
}

func joined(vs [][][]byte) []byte {
	var b []byte
	for _, v := range vs {
		for _, p := range v {
			b = append(b, p...)
		}
	}
	return b
}

// TestRoundTrip sends the writes through a sealed pair and reads them
// back with reads of awkward sizes, in both ciphers.
func TestRoundTrip(t *testing.T) { withCrews(t, testRoundTrip) }

func testRoundTrip(t *testing.T) {
	for _, c := range ciphers {
		for _, chunk := range [][]int{{1 << 20}, {1, 7, 33, 4096}, {65536, 100000}} {
			t.Run(fmt.Sprintf("%v/reads=%v", c, chunk), func(t *testing.T) {
				a, b := pair(t, c, sealed.Limits{})
				vs := writes()
				go func() {
					for _, v := range vs {
						writeAll(t, a, v)
					}
					a.Shutdown()
				}()
				got, err := readAll(t, b, chunk)
				if !errors.Is(err, ioloop.ErrEOF) {
					t.Errorf("read ended with %v, want ErrEOF", err)
				}
				if want := joined(vs); !bytes.Equal(got, want) {
					t.Fatalf("read %d bytes, want %d; first difference at %d", len(got), len(want), looptest.FirstDiff(got, want))
				}
			})
		}
	}
}

// TestBothWays writes in both directions at once, so that each end's
// writes wait on the other's reads.
func TestBothWays(t *testing.T) { withCrews(t, testBothWays) }

func testBothWays(t *testing.T) {
	a, b := pair(t, sealed.AES256GCM, sealed.Limits{})
	big := looptest.Filled(8 << 20)
	errs := make(chan error, 2)
	for _, s := range []*sealed.Stream{a, b} {
		go func() {
			writeAll(t, s, [][]byte{big})
			errs <- nil
		}()
	}
	for _, s := range []*sealed.Stream{a, b} {
		got := make([]byte, 0, len(big))
		buf := make([]byte, 300000)
		for len(got) < len(big) {
			n, err := s.Read(buf[:min(len(buf), len(big)-len(got))], true)
			if err == unix.EAGAIN {
				waitFd(t, s.Fd(), true)
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, buf[:n]...)
		}
		if !bytes.Equal(got, big) {
			t.Fatalf("first difference at %d", looptest.FirstDiff(got, big))
		}
	}
	<-errs
	<-errs
}

// TestKeyUpdate forces key updates at small limits, mid-stream, and
// checks the data across them.
func TestKeyUpdate(t *testing.T) { withCrews(t, testKeyUpdate) }

func testKeyUpdate(t *testing.T) {
	for _, lim := range []sealed.Limits{{Records: 3}, {Bytes: 100000}, {Records: 1}} {
		t.Run(fmt.Sprintf("%d_records_%d_bytes", lim.Records, lim.Bytes), func(t *testing.T) {
			a, b := pair(t, sealed.ChaCha20Poly1305, lim)
			vs := writes()
			wrote := make(chan struct{})
			go func() {
				defer close(wrote)
				for _, v := range vs {
					writeAll(t, a, v)
				}
				a.Shutdown()
			}()
			got, err := readAll(t, b, []int{5000, 70000})
			<-wrote
			if !errors.Is(err, ioloop.ErrEOF) {
				t.Errorf("read ended with %v, want ErrEOF", err)
			}
			if want := joined(vs); !bytes.Equal(got, want) {
				t.Fatalf("read %d bytes, want %d", len(got), len(want))
			}
			w, _ := a.Gens()
			if _, r := b.Gens(); w < 3 || r != w {
				t.Errorf("writer made %d key updates and reader followed %d, want several, the same", w, r)
			}
		})
	}
}

// TestLimitsPastHard refuses limits that would use a key past the hard
// limits.
func TestLimitsPastHard(t *testing.T) {
	ra, _ := socketPair(t)
	kd, _ := keys(t, sealed.AES256GCM)
	_, err := sealed.New(ra, kd, sealed.Options{Limits: sealed.Limits{Records: sealed.HardRecords}})
	if !errors.Is(err, sealed.ErrKeyLimit) {
		t.Fatalf("New with Records at the hard limit: %v, want ErrKeyLimit", err)
	}
}

// TestDerive checks that the two ends' keys match crosswise, that the
// directions differ, and that every input changes them.
func TestDerive(t *testing.T) {
	d, a := keys(t, sealed.AES256GCM)
	if d.Send != a.Recv || d.Recv != a.Send {
		t.Fatal("the ends' keys do not match")
	}
	if d.Send == d.Recv {
		t.Fatal("both directions have one key")
	}
	for name, in := range map[string][3][]byte{
		"mesh key":       {[]byte("another key"), hello(1), hello(2)},
		"dialer HELLO":   {testKey, append(hello(1)[:111], 0), hello(2)},
		"acceptor HELLO": {testKey, hello(1), append(hello(2)[:111], 0)},
		"HELLOs swapped": {testKey, hello(2), hello(1)},
	} {
		o, _, err := sealed.Derive(sealed.AES256GCM, in[0], in[1], in[2])
		if err != nil {
			t.Fatal(err)
		}
		if o.Send == d.Send || o.Recv == d.Recv {
			t.Errorf("%s changed: same keys", name)
		}
	}
}

// TestAllocs proves a steady stream of small frames, sealed and opened,
// allocates nothing.
func TestAllocs(t *testing.T) {
	a, b := pair(t, sealed.AES256GCM, sealed.Limits{})
	hdr, payload := make([]byte, 32), make([]byte, 8)
	bufs := [][]byte{hdr, payload}
	p := make([]byte, 4096)
	allocs := testing.AllocsPerRun(1000, func() {
		if n, err := a.Writev(bufs); n != 40 || err != nil {
			t.Fatalf("Writev: %d, %v", n, err)
		}
		got := 0
		for got < 40 {
			n, err := b.Read(p, true)
			if err != nil && err != unix.EAGAIN {
				t.Fatal(err)
			}
			got += n
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocs per frame, want 0", allocs)
	}
}

// TestPreferred: AES-256-GCM only between ends that both prefer it.
func TestPreferred(t *testing.T) {
	if c := sealed.Preferred(); c != sealed.AES256GCM && c != sealed.ChaCha20Poly1305 {
		t.Fatalf("Preferred() = %v", c)
	}
	for _, tc := range []struct{ a, b, want sealed.Cipher }{
		{sealed.AES256GCM, sealed.AES256GCM, sealed.AES256GCM},
		{sealed.AES256GCM, sealed.ChaCha20Poly1305, sealed.ChaCha20Poly1305},
		{sealed.ChaCha20Poly1305, sealed.AES256GCM, sealed.ChaCha20Poly1305},
	} {
		if got := sealed.Agree(tc.a, tc.b); got != tc.want {
			t.Errorf("Agree(%v, %v) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

// TestAllocsCrew proves 1 MiB messages sealed and opened by a crew of 4
// allocate nothing.
func TestAllocsCrew(t *testing.T) {
	crew = 4
	defer func() { crew = 1 }()
	sealed.HireCrew(4)
	a, b := pair(t, sealed.AES256GCM, sealed.Limits{})
	msg := looptest.Patterned(1, 1<<20)
	got := make([]byte, 1<<20)
	vec := make([][]byte, 1)
	either := []unix.PollFd{{Fd: int32(a.Fd()), Events: unix.POLLOUT}, {Fd: int32(b.Fd()), Events: unix.POLLIN}}
	was := sealed.CrewJobs()
	allocs := testing.AllocsPerRun(20, func() {
		vec[0] = msg
		n := 0
		for len(vec[0]) > 0 || a.Buffered() || n < len(got) {
			if len(vec[0]) > 0 {
				k, err := a.Writev(vec)
				if err != nil && err != unix.EAGAIN {
					t.Fatal(err)
				}
				vec[0] = vec[0][max(k, 0):]
			} else if err := a.Flush(); err != nil {
				t.Fatal(err)
			}
			k, err := b.Read(got[n:], true)
			if err != nil && err != unix.EAGAIN {
				t.Fatal(err)
			}
			n += max(k, 0)
			if k <= 0 {
				unix.Poll(either, 100) // room to write or bytes to read
			}
		}
	})
	if allocs != 0 || !bytes.Equal(got, msg) || sealed.CrewJobs() == was {
		t.Fatalf("%v allocs per MiB, bytes equal %v, crew jobs %d: want 0, true, some", allocs, bytes.Equal(got, msg), sealed.CrewJobs()-was)
	}
}
