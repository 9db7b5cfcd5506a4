package sealed_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/boltmesh/boltmesh/internal/link/sealed"
	"github.com/boltmesh/boltmesh/internal/looptest"
	"github.com/boltmesh/boltmesh/ioloop"
)

// FuzzOpen feeds arbitrary bytes to the opener of a sealed stream whose
// key the seeds were sealed with. Whatever the bytes, it must not panic,
// and what it hands over must be a prefix of the seeds' plaintext: no
// altered byte gets through. The stream ends with ErrEOF or ErrTampered.
func FuzzOpen(f *testing.F) {
	plain := [][]byte{[]byte("boltmesh"), looptest.Patterned(9, 70000), looptest.Patterned(10, 40)}
	all := bytes.Join(plain, nil)
	lim := sealed.Limits{Records: 2}
	for _, c := range ciphers {
		wire := sealedBytes(f, c, lim, plain)
		f.Add(uint8(c), wire)
		f.Add(uint8(c), wire[:len(wire)/2])
		recs := records(wire)
		f.Add(uint8(c), append(append([]byte{}, recs[1]...), recs[0]...))
	}
	f.Add(uint8(1), []byte{})
	acceptor := map[sealed.Cipher]sealed.Keys{}
	for _, c := range ciphers {
		_, acceptor[c] = keys(f, c)
	}
	f.Fuzz(func(t *testing.T, cipherByte uint8, wire []byte) {
		c := sealed.AES256GCM
		if cipherByte%2 == 0 {
			c = sealed.ChaCha20Poly1305
		}
		got, err := openMem(t, acceptor[c], lim, wire)
		if !bytes.HasPrefix(all, got) {
			t.Fatalf("handed over %d bytes that are not the sealed plaintext's first", len(got))
		}
		if !errors.Is(err, ioloop.ErrEOF) && !errors.Is(err, sealed.ErrTampered) {
			t.Fatalf("ended with %v", err)
		}
	})
}

// openMem is openBytes, with the acceptor's keys ka, over an in-memory
// stream: wire read in pieces of
// up to 4000 bytes, then the end (fast enough for fuzzing).
func openMem(t *testing.T, ka sealed.Keys, lim sealed.Limits, wire []byte) ([]byte, error) {
	b, err := sealed.New(&memStream{data: wire}, ka, sealed.Options{Limits: lim})
	if err != nil {
		t.Fatal(err)
	}
	return readAll(t, b, []int{1 << 20, 3, 70000})
}

// memStream is an ioloop.Stream that reads data and then its end, and
// takes every write.
type memStream struct{ data []byte }

func (m *memStream) Fd() int { return -1 }

func (m *memStream) Read(p []byte, _ bool) (int, error) {
	if len(m.data) == 0 {
		return 0, ioloop.ErrEOF
	}
	n := copy(p[:min(len(p), 4000)], m.data)
	m.data = m.data[n:]
	return n, nil
}

func (m *memStream) Writev(bufs [][]byte) (int, error) {
	n := 0
	for _, b := range bufs {
		n += len(b)
	}
	return n, nil
}

func (m *memStream) Shutdown()    {}
func (m *memStream) Close() error { return nil }
