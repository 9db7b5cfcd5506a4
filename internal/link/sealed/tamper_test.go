package sealed_test

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/boltmesh/boltmesh/internal/link/sealed"
	"github.com/boltmesh/boltmesh/internal/looptest"
	"github.com/boltmesh/boltmesh/ioloop"
	"golang.org/x/sys/unix"
)

// sealedBytes seals the plaintexts, each with one Writev, at lim, and
// returns the byte stream on the wire.
func sealedBytes(t testing.TB, c sealed.Cipher, lim sealed.Limits, plain [][]byte) []byte {
	t.Helper()
	ra, rb := socketPair(t)
	kd, _ := keys(t, c)
	a, err := sealed.New(ra, kd, opts(lim))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan []byte)
	go func() { done <- rawStream(t, rb) }()
	for _, p := range plain {
		writeAll(t, a, [][]byte{p})
	}
	a.Close()
	wire := <-done
	rb.Close()
	return wire
}

// openBytes hands wire to the acceptor's end of a sealed stream and
// returns what it read and the error that ended the reading.
func openBytes(t testing.TB, c sealed.Cipher, lim sealed.Limits, wire []byte) ([]byte, error) {
	t.Helper()
	ra, rb := socketPair(t)
	_, ka := keys(t, c)
	b, err := sealed.New(rb, ka, opts(lim))
	if err != nil {
		t.Fatal(err)
	}
	fed := make(chan struct{})
	go func() {
		defer close(fed)
		feed(t, ra, wire)
	}()
	got, err := readAll(t, b, []int{1 << 20, 3, 70000})
	b.Close() // the feeder's writes fail from now on
	<-fed
	return got, err
}

// feed writes wire to raw until it is all written or the other end is
// gone, and closes raw.
func feed(t testing.TB, raw ioloop.Stream, wire []byte) {
	defer raw.Close()
	for len(wire) > 0 {
		n, err := raw.Writev([][]byte{wire})
		switch {
		case err == unix.EAGAIN:
			waitFd(t, raw.Fd(), false)
		case err != nil:
			return
		default:
			wire = wire[n:]
		}
	}
}

// TestTampered alters a sealed stream on its way as a relay could after
// the handshake: flips, drops, replays, reorders and cuts. Every change
// fails the stream with ErrTampered, and what was read before is exactly
// the plaintext of the records before the first altered one.
func TestTampered(t *testing.T) { withCrews(t, testTampered) }

func testTampered(t *testing.T) {
	var plain [][]byte
	for i, n := range []int{40, 8, 300000, 1, 65536, 40} {
		plain = append(plain, looptest.Patterned(uint64(i), n))
	}
	lim := sealed.Limits{Records: 8} // a key update among them
	wire := sealedBytes(t, sealed.AES256GCM, lim, plain)
	recs := records(wire)
	u := slices.IndexFunc(recs, func(r record) bool { return r[4] == 1 }) // the key update
	if len(recs) < 10 || u < 0 {
		t.Fatalf("%d records, the key update at %d: want 10 or more, one an update", len(recs), u)
	}
	// clean returns the plaintext of recs[:k].
	clean := func(k int) []byte {
		var w []byte
		for _, r := range recs[:k] {
			w = append(w, r...)
		}
		got, err := openBytes(t, sealed.AES256GCM, lim, w)
		if !errors.Is(err, ioloop.ErrEOF) {
			t.Fatalf("clean prefix of %d records: %v", k, err)
		}
		return got
	}
	join := func(rs ...[]record) []byte {
		var w []byte
		for _, s := range rs {
			for _, r := range s {
				w = append(w, r...)
			}
		}
		return w
	}
	flip := func(k, at int) []byte {
		w := join(recs)
		off := len(join(recs[:k])) + at
		w[off] ^= 0x01
		return w
	}
	last := len(recs) - 1
	cases := []struct {
		name string
		wire []byte
		good int // records intact before the first altered one
	}{
		{"flip length", flip(2, 0), 2},
		{"flip length high", flip(2, 3), 2},
		{"flip type", flip(1, 4), 1},
		{"flip reserved", flip(1, 6), 1},
		{"flip first byte", flip(0, sealed.HeaderSize), 0},
		{"flip body", flip(2, sealed.HeaderSize+5000), 2},
		{"flip tag", flip(3, len(recs[3])-1), 3},
		{"flip last", flip(last, len(recs[last])-1), last},
		{"drop", join(recs[:2], recs[3:]), 2},
		{"drop key update", join(recs[:u], recs[u+1:]), u},
		{"flip key update", flip(u, sealed.HeaderSize), u},
		{"replay", join(recs[:3], recs[2:]), 3},
		{"replay first", join(recs[:1], recs), 1},
		{"reorder", join(recs[:1], recs[2:3], recs[1:2], recs[3:]), 1},
		{"cut in header", join(recs[:2], []record{recs[2][:5]}), 2},
		{"cut in body", join(recs[:2], []record{recs[2][:500]}), 2},
		{"cut in tag", join(recs[:2], []record{recs[2][:len(recs[2])-3]}), 2},
		{"junk after", append(join(recs), 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3), len(recs)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := openBytes(t, sealed.AES256GCM, lim, tc.wire)
			var te *sealed.TamperError
			if !errors.Is(err, sealed.ErrTampered) || !errors.As(err, &te) {
				t.Fatalf("read ended with %v, want ErrTampered", err)
			}
			if cut := strings.HasPrefix(tc.name, "cut") || tc.name == "junk after"; te.Cut != cut { // the junk: a record the stream ends inside
				t.Fatalf("TamperError.Cut %v, want %v", te.Cut, cut)
			}
			if want := clean(tc.good); !bytes.Equal(got, want) {
				t.Fatalf("read %d bytes before the failure, want the %d of the %d intact records", len(got), len(want), tc.good)
			}
		})
	}
}

// TestCutAtRecord: a stream that ends between records ends as the
// wrapped stream does (the peer closed it), with every byte before.
func TestCutAtRecord(t *testing.T) {
	plain := [][]byte{looptest.Patterned(1, 100), looptest.Patterned(2, 200)}
	wire := sealedBytes(t, sealed.ChaCha20Poly1305, sealed.Limits{}, plain)
	recs := records(wire)
	got, err := openBytes(t, sealed.ChaCha20Poly1305, sealed.Limits{}, recs[0])
	if !errors.Is(err, ioloop.ErrEOF) || !bytes.Equal(got, plain[0]) {
		t.Fatalf("got %d bytes and %v, want the first record's 100 and ErrEOF", len(got), err)
	}
}

// TestWrongKey: records sealed under another key do not open.
func TestWrongKey(t *testing.T) {
	wire := sealedBytes(t, sealed.AES256GCM, sealed.Limits{}, [][]byte{[]byte("hello")})
	ra, rb := socketPair(t)
	d, _, err := sealed.Derive(sealed.AES256GCM, []byte("not the key"), hello(1), hello(2))
	if err != nil {
		t.Fatal(err)
	}
	_, a := d, d
	a.Send, a.Recv = d.Recv, d.Send
	b, err := sealed.New(rb, a, sealed.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	go feed(t, ra, wire)
	got, err := readAll(t, b, []int{4096})
	if !errors.Is(err, sealed.ErrTampered) || len(got) != 0 {
		t.Fatalf("got %q and %v, want nothing and ErrTampered", got, err)
	}
}
