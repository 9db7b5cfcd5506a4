package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"
)

// rendezvous runs rank 0's side and world-1 clients with the given keys
// (serverKey for rank 0, keys[r] for rank r) and returns every rank's list
// and error.
func rendezvous(t *testing.T, world int, serverKey []byte, keys [][]byte) ([][]string, []error) {
	t.Helper()
	ln := listenLoopback(t)
	lists, errs := make([][]string, world), make([]error, world)
	var wg sync.WaitGroup
	wg.Go(func() { lists[0], errs[0] = serveRendezvous(ln, world, "0.0.0.0:7000", serverKey, 2*time.Second) })
	for r := 1; r < world; r++ {
		wg.Go(func() {
			lists[r], errs[r] = joinRendezvous(ln.Addr().String(), r, world, fmt.Sprintf(":%d", 7000+r), keys[r], 2*time.Second)
		})
	}
	wg.Wait()
	return lists, errs
}

func listenLoopback(t testing.TB) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// served is a rendezvous server running in the background.
type served struct {
	addr    string
	done    chan struct{}
	peers   []string
	err     error
	mu      sync.Mutex
	rejects []error
}

// serve starts s on a loopback listener, recording its refusals.
func serve(t testing.TB, s *rendezvousServer) *served {
	t.Helper()
	ln := listenLoopback(t)
	sv := &served{addr: ln.Addr().String(), done: make(chan struct{})}
	s.onReject = func(err error) {
		sv.mu.Lock()
		sv.rejects = append(sv.rejects, err)
		sv.mu.Unlock()
	}
	go func() {
		defer close(sv.done)
		sv.peers, sv.err = s.serve(ln)
	}()
	t.Cleanup(func() { <-sv.done })
	return sv
}

// wait waits for the server's result.
func (sv *served) wait() ([]string, error) {
	<-sv.done
	return sv.peers, sv.err
}

// rejected returns the refusals so far.
func (sv *served) rejected() []error {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	return slices.Clone(sv.rejects)
}

// waitReject waits (up to 30 s) for the first refusal.
func (sv *served) waitReject(t *testing.T) error {
	t.Helper()
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if r := sv.rejected(); len(r) > 0 {
			return r[0]
		}
	}
	t.Fatal("no connection was refused within 30s")
	return nil
}

// join runs ranks 1..world-1 against addr and fails the test on any error.
func join(t *testing.T, addr string, world int, key []byte) {
	t.Helper()
	errs := make([]error, world)
	var wg sync.WaitGroup
	for r := 1; r < world; r++ {
		wg.Go(func() {
			_, errs[r] = joinRendezvous(addr, r, world, fmt.Sprintf("127.0.0.1:%d", 7000+r), key, 30*time.Second)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
}

// stranger connects to addr and returns the connection, closed at cleanup.
func stranger(t testing.TB, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestRendezvous(t *testing.T) {
	key := []byte("k")
	lists, errs := rendezvous(t, 3, key, [][]byte{nil, key, key})
	want := []string{"127.0.0.1:7000", "127.0.0.1:7001", "127.0.0.1:7002"}
	for r := range 3 {
		if errs[r] != nil || !slices.Equal(lists[r], want) {
			t.Errorf("rank %d: %v, %v; want %v", r, lists[r], errs[r], want)
		}
	}
}

func TestRendezvousWrongKey(t *testing.T) {
	_, errs := rendezvous(t, 2, []byte("right"), [][]byte{nil, []byte("wrong")})
	if !errors.Is(errs[0], errMeshKey) || !errors.Is(errs[1], errRefused) {
		t.Fatalf("a rank with the wrong key: rank 0 %v, rank 1 %v", errs[0], errs[1])
	}
}

// TestRendezvousKeyProof: rank 0 refuses a hello without a key proof when
// the run has a key (errNoKeyProof), one with a proof when it has none
// (errUnexpectedKeyProof), and one with another key's (errMeshKey alone);
// each is errMeshKey, the rank learns it was refused, and the true rank 1
// still takes its slot.
func TestRendezvousKeyProof(t *testing.T) {
	for _, c := range []struct {
		name         string
		server, rank []byte
		want         error
		notWant      []error
	}{
		{"keyless hello, keyed run", []byte("k"), nil, errNoKeyProof, []error{errUnexpectedKeyProof}},
		{"keyed hello, keyless run", nil, []byte("k"), errUnexpectedKeyProof, []error{errNoKeyProof}},
		{"another key", []byte("k"), []byte("other"), errMeshKey, []error{errNoKeyProof, errUnexpectedKeyProof}},
	} {
		t.Run(c.name, func(t *testing.T) {
			sv := serve(t, &rendezvousServer{world: 2, self: "127.0.0.1:7000", key: c.server, timeout: 30 * time.Second})
			_, err := joinRendezvous(sv.addr, 1, 2, "127.0.0.1:7001", c.rank, 30*time.Second)
			if !errors.Is(err, errRefused) {
				t.Errorf("the rank: %v, want errRefused", err)
			}
			err = sv.waitReject(t)
			if !errors.Is(err, c.want) || !errors.Is(err, errMeshKey) || slices.ContainsFunc(c.notWant, func(e error) bool { return errors.Is(err, e) }) {
				t.Errorf("rank 0 refused the hello with %v, want %v", err, c.want)
			}
			join(t, sv.addr, 2, c.server)
			if _, err := sv.wait(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestRendezvousReplyKeyProof: a rank refuses a peer list without a key
// proof when it has a key (errNoKeyProof), and one with a proof when it
// has none (errUnexpectedKeyProof).
func TestRendezvousReplyKeyProof(t *testing.T) {
	for _, c := range []struct {
		name       string
		rank, zero []byte
		want       error
	}{
		{"keyed rank, keyless peer list", []byte("k"), nil, errNoKeyProof},
		{"keyless rank, keyed peer list", nil, []byte("k"), errUnexpectedKeyProof},
	} {
		t.Run(c.name, func(t *testing.T) {
			addr := fakeRankZero(t, func(c0 net.Conn, br *bufio.Reader) {
				writeLine(c0, challenge{Nonce: newNonce()})
				var h hello
				if readLine(br, maxHelloLine, &h) != nil {
					return
				}
				r := reply{Peers: []string{"127.0.0.1:7000", h.Addr}, Server: h.Server, Nonce: h.Nonce}
				r.MAC = mac(c.zero, r.content())
				writeLine(c0, r)
			})
			_, err := joinRendezvous(addr, 1, 2, "127.0.0.1:7001", c.rank, 30*time.Second)
			if !errors.Is(err, c.want) || !errors.Is(err, errMeshKey) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
		})
	}
}

// TestRendezvousIdleStrangers: 20 connections that say nothing, made
// before any rank, do not hold up the ranks. Each stranger may keep its
// handshake slot for a minute here, far past the test's 30 s formation
// timeout: a rank 0 serving one connection at a time could not finish.
func TestRendezvousIdleStrangers(t *testing.T) {
	sv := serve(t, &rendezvousServer{world: 4, self: "127.0.0.1:7000", timeout: 30 * time.Second, handshake: time.Minute})
	for range 20 {
		stranger(t, sv.addr)
	}
	join(t, sv.addr, 4, nil)
	if _, err := sv.wait(); err != nil {
		t.Fatal(err)
	}
}

// TestRendezvousLongLine: a hello line without end is refused once it
// passes maxHelloLine: rank 0 closes the connection while the stranger is
// still sending (its writes fail long before 64 MiB), and the ranks form
// the mesh regardless.
func TestRendezvousLongLine(t *testing.T) {
	sv := serve(t, &rendezvousServer{world: 2, self: "127.0.0.1:7000", timeout: 30 * time.Second})
	c := stranger(t, sv.addr)
	chunk := make([]byte, 1<<20)
	for i := range chunk {
		chunk[i] = 'x'
	}
	var werr error
	sent := 0
	for ; sent < 64 && werr == nil; sent++ {
		_, werr = c.Write(chunk)
	}
	if !errors.Is(werr, syscall.ECONNRESET) && !errors.Is(werr, syscall.EPIPE) {
		t.Fatalf("rank 0 took %d MiB of one line (write error %v)", sent, werr)
	}
	if err := sv.waitReject(t); !errors.Is(err, errLineTooLong) {
		t.Fatalf("refusal %v, want errLineTooLong", err)
	}
	join(t, sv.addr, 2, nil)
	if _, err := sv.wait(); err != nil {
		t.Fatal(err)
	}
}

// handshakeAs plays rank h.Rank by hand against addr with key: it reads
// the challenge, sends h answering it and returns the hello line it sent
// and rank 0's reply line.
func handshakeAs(t *testing.T, addr string, h hello, key []byte) (sent, got []byte) {
	t.Helper()
	c := stranger(t, addr)
	c.SetDeadline(time.Now().Add(30 * time.Second))
	br := bufio.NewReader(c)
	var ch challenge
	if err := readLine(br, maxChallenge, &ch); err != nil {
		t.Fatal(err)
	}
	h.Server, h.Nonce = ch.Nonce, newNonce()
	h.MAC = mac(key, h.content())
	sent, _ = json.Marshal(h)
	sent = append(sent, '\n')
	if _, err := c.Write(sent); err != nil {
		t.Fatal(err)
	}
	got, err := br.ReadBytes('\n')
	if err != nil {
		t.Fatal(err)
	}
	return sent, got
}

// recordRendezvous runs a genuine 2-rank keyed rendezvous, rank 1 played
// by hand, and returns rank 1's hello line and rank 0's reply line.
func recordRendezvous(t *testing.T, key []byte) (helloLine, replyLine []byte) {
	t.Helper()
	sv := serve(t, &rendezvousServer{world: 2, self: "127.0.0.1:7000", key: key, timeout: 30 * time.Second})
	helloLine, replyLine = handshakeAs(t, sv.addr, hello{Rank: 1, World: 2, Addr: "127.0.0.1:7001"}, key)
	if _, err := sv.wait(); err != nil {
		t.Fatalf("the recorded rendezvous: %v", err)
	}
	var r reply
	if err := json.Unmarshal(replyLine, &r); err != nil || len(r.Peers) != 2 {
		t.Fatalf("the recorded reply %q: %v", replyLine, err)
	}
	return helloLine, replyLine
}

// TestRendezvousReplayedHello: a keyed hello recorded from one rendezvous
// and replayed to the next is refused (its MAC covers the other
// rendezvous's nonce), and the true rank 1 still takes its slot.
func TestRendezvousReplayedHello(t *testing.T) {
	key := []byte("k")
	recorded, _ := recordRendezvous(t, key)
	sv := serve(t, &rendezvousServer{world: 2, self: "127.0.0.1:7000", key: key, timeout: 30 * time.Second})
	c := stranger(t, sv.addr)
	if _, err := bufio.NewReader(c).ReadBytes('\n'); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(recorded); err != nil {
		t.Fatal(err)
	}
	if err := sv.waitReject(t); !errors.Is(err, errReplay) {
		t.Fatalf("replayed hello: %v, want errReplay", err)
	}
	join(t, sv.addr, 2, key)
	if _, err := sv.wait(); err != nil {
		t.Fatal(err)
	}
}

// fakeRankZero accepts one connection on a new listener and runs serve on
// it; it returns the listener's address.
func fakeRankZero(t *testing.T, serve func(c net.Conn, br *bufio.Reader)) string {
	t.Helper()
	ln := listenLoopback(t)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer ln.Close()
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(30 * time.Second))
		serve(c, bufio.NewReader(c))
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return ln.Addr().String()
}

// TestRendezvousReplayedReply: a keyed peer list recorded from one
// rendezvous and replayed by a fake rank 0 is refused by the rank: its
// MAC covers another nonce of the rank's.
func TestRendezvousReplayedReply(t *testing.T) {
	key := []byte("k")
	_, recorded := recordRendezvous(t, key)
	addr := fakeRankZero(t, func(c net.Conn, br *bufio.Reader) {
		writeLine(c, challenge{Nonce: newNonce()})
		br.ReadBytes('\n')
		c.Write(recorded)
	})
	_, err := joinRendezvous(addr, 1, 2, "127.0.0.1:7001", key, 30*time.Second)
	if !errors.Is(err, errReplay) {
		t.Fatalf("replayed peer list: %v, want errReplay", err)
	}
}

// TestRendezvousRankBoundsReads: a rank reads rank 0's challenge and
// reply up to their bounds only.
func TestRendezvousRankBoundsReads(t *testing.T) {
	endless := func(c net.Conn) {
		chunk := make([]byte, 1<<20)
		for i := range chunk {
			chunk[i] = 'x'
		}
		for range 64 {
			if _, err := c.Write(chunk); err != nil {
				return
			}
		}
	}
	for name, serve := range map[string]func(net.Conn, *bufio.Reader){
		"challenge": func(c net.Conn, _ *bufio.Reader) { endless(c) },
		"reply": func(c net.Conn, br *bufio.Reader) {
			writeLine(c, challenge{Nonce: newNonce()})
			br.ReadBytes('\n')
			endless(c)
		},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := joinRendezvous(fakeRankZero(t, serve), 1, 2, "127.0.0.1:7001", nil, 30*time.Second)
			if !errors.Is(err, errLineTooLong) {
				t.Fatalf("got %v, want errLineTooLong", err)
			}
		})
	}
}

func TestFillHost(t *testing.T) {
	via := &net.TCPAddr{IP: net.IPv4(10, 0, 0, 2), Port: 1}
	for in, want := range map[string]string{
		":5":          "10.0.0.2:5",
		"0.0.0.0:5":   "10.0.0.2:5",
		"[::]:5":      "10.0.0.2:5",
		"1.2.3.4:5":   "1.2.3.4:5",
		"hostname:5":  "hostname:5",
		"not-an-addr": "not-an-addr",
	} {
		if got := fillHost(in, via); got != want {
			t.Errorf("fillHost(%q) = %q, want %q", in, got, want)
		}
	}
}

// BenchmarkRendezvous times the formation of a 4-rank rendezvous (rank 0
// and 3 ranks in this process, over loopback), with 0 or 20 idle
// strangers connected to rank 0 before the ranks.
func BenchmarkRendezvous(b *testing.B) {
	for _, strangers := range []int{0, 20} {
		b.Run(fmt.Sprintf("strangers=%d", strangers), func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				ln := listenLoopback(b)
				for range strangers {
					stranger(b, ln.Addr().String())
				}
				b.StartTimer()
				errs := make([]error, 4)
				var wg sync.WaitGroup
				wg.Go(func() { _, errs[0] = serveRendezvous(ln, 4, "127.0.0.1:7000", []byte("k"), 30*time.Second) })
				for r := 1; r < 4; r++ {
					wg.Go(func() {
						_, errs[r] = joinRendezvous(ln.Addr().String(), r, 4, fmt.Sprintf("127.0.0.1:%d", 7000+r), []byte("k"), 30*time.Second)
					})
				}
				wg.Wait()
				if err := errors.Join(errs...); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
