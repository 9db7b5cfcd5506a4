//go:build linux

package shm_test

import (
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/internal/shm"
)

func FuzzDecodeLen(f *testing.F) {
	f.Add(uint32(0), 8)
	f.Add(uint32(8), 8)
	f.Add(uint32(9), 8)
	f.Add(uint32(1<<32-1), shm.MaxMsg)
	f.Fuzz(func(t *testing.T, n uint32, bufLen int) {
		if bufLen < 0 {
			bufLen = -bufLen
		}
		var p [shm.PrefixLen]byte
		binary.LittleEndian.PutUint32(p[:], n)
		got, err := shm.DecodeLen(p, bufLen)
		switch {
		case n == 0:
			if !errors.Is(err, shm.ErrEmpty) {
				t.Fatalf("DecodeLen(0, %d) = %d, %v; want ErrEmpty", bufLen, got, err)
			}
		case uint64(n) > uint64(bufLen):
			if !errors.Is(err, shm.ErrTooLong) {
				t.Fatalf("DecodeLen(%d, %d) = %d, %v; want ErrTooLong", n, bufLen, got, err)
			}
		default:
			if err != nil || got != int(n) {
				t.Fatalf("DecodeLen(%d, %d) = %d, %v", n, bufLen, got, err)
			}
		}
	})
}

// FuzzRecvFDs feeds arbitrary bytes to RecvFDs: every message it returns
// must be one the bytes frame, in order, and it must stop with an error at
// the end, never hang or panic.
func FuzzRecvFDs(f *testing.F) {
	f.Add([]byte{3, 0, 0, 0, 'a', 'b', 'c', 1, 0, 0, 0, 'd'}, uint8(8))
	f.Add([]byte{0, 0, 0, 0}, uint8(8))
	f.Add([]byte{200, 0, 0, 0, 1}, uint8(8))
	f.Add([]byte{2, 0}, uint8(1))
	f.Fuzz(func(t *testing.T, wire []byte, bufLen uint8) {
		a, b := connPair(t)
		go func() {
			a.Write(wire)
			a.CloseWrite()
		}()
		b.SetReadDeadline(time.Now().Add(10 * time.Second))
		buf := make([]byte, bufLen)
		rest := wire
		for {
			n, fds, err := shm.RecvFDs(b, buf, 2)
			if err != nil {
				return
			}
			if fds != nil {
				t.Fatalf("fds from a stream that carried none: %v", fds)
			}
			if len(rest) < shm.PrefixLen+n || int(binary.LittleEndian.Uint32(rest)) != n || string(rest[shm.PrefixLen:shm.PrefixLen+n]) != string(buf[:n]) {
				t.Fatalf("message of %d bytes %q does not match the wire %q", n, buf[:n], rest)
			}
			rest = rest[shm.PrefixLen+n:]
		}
	})
}
