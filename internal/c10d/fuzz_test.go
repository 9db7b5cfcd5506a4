package c10d

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// scripted is a connection whose store answers with a fixed script and
// ignores what it is sent.
type scripted struct{ r *bytes.Reader }

func (s *scripted) Read(b []byte) (int, error)       { return s.r.Read(b) }
func (s *scripted) Write(b []byte) (int, error)      { return len(b), nil }
func (s *scripted) Close() error                     { return nil }
func (s *scripted) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (s *scripted) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (s *scripted) SetDeadline(time.Time) error      { return nil }
func (s *scripted) SetReadDeadline(time.Time) error  { return nil }
func (s *scripted) SetWriteDeadline(time.Time) error { return nil }

// fuzzMax is the MaxValue of the fuzzed clients.
const fuzzMax = 64

// FuzzResponses feeds arbitrary store answers to the probe and to a
// sequence of operations (ops picks them, a byte each): nothing panics,
// nothing longer than MaxValue is returned or allocated for, every error
// is an *OpError, and once the client is broken it stays broken.
func FuzzResponses(f *testing.F) {
	u64 := func(v uint64) []byte { return binary.NativeEndian.AppendUint64(nil, v) }
	cat := func(bs ...[]byte) []byte { return bytes.Join(bs, nil) }
	f.Add([]byte{0, 1, 2, 3}, cat(u64(2), []byte{0}, u64(3), []byte("abc"), u64(7), []byte{1}))
	f.Add([]byte{1}, cat(u64(0), []byte{0}, u64(1<<63)))
	f.Add([]byte{4, 5, 6}, cat(u64(1), u64(1), []byte{9}))
	f.Add([]byte{}, []byte(`{"nonce":"0011"}`+"\n"))
	f.Fuzz(func(t *testing.T, ops, answers []byte) {
		o, _ := Options{MaxValue: fuzzMax}.withDefaults()
		br := bufio.NewReader(&scripted{bytes.NewReader(answers)})
		if err := checkProbe(br); err != nil {
			if !errors.Is(err, errNoAnswer) && !errors.Is(err, ErrNotStore) {
				t.Fatalf("probe: %v is neither errNoAnswer nor ErrNotStore", err)
			}
			return
		}
		c := newClient("fuzz", &scripted{}, br, ProtocolLegacy, o)
		ctx := context.Background()
		broken := false
		for _, op := range ops {
			var err error
			switch op % 7 {
			case 0:
				err = c.Set(ctx, "k", []byte("v"))
			case 1:
				var v []byte
				v, err = c.Get(ctx, "k")
				if len(v) > fuzzMax {
					t.Fatalf("Get returned %d bytes, limit %d", len(v), fuzzMax)
				}
			case 2:
				err = c.Wait(ctx, "k", "l")
			case 3:
				_, err = c.Check(ctx, "k")
			case 4:
				_, err = c.Add(ctx, "k", 1)
			case 5:
				_, err = c.Delete(ctx, "k")
			case 6:
				_, err = c.NumKeys(ctx)
			}
			var oe *OpError
			switch {
			case err == nil && broken:
				t.Fatal("an operation succeeded on a broken client")
			case err == nil:
			case !errors.As(err, &oe):
				t.Fatalf("%v is not an *OpError", err)
			case broken && !errors.Is(err, ErrBroken):
				t.Fatalf("%v on a broken client is not ErrBroken", err)
			case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, ErrTooLong), errors.Is(err, ErrProtocol), errors.Is(err, ErrBroken):
				broken = true
			default:
				t.Fatalf("unexpected error %v", err)
			}
		}
	})
}
