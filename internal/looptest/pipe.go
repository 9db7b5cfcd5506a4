package looptest

import (
	"sync/atomic"
	"testing"

	"github.com/boltmesh/boltmesh/internal/link/shm"
	"github.com/boltmesh/boltmesh/ioloop"
	"golang.org/x/sys/unix"
)

// PipePair registers both sides of a pipe with rings of ring bytes in
// anonymous shared memory on l, as connections 1 and 2 with handlers ha
// and hb, unmapped once both have released it.
func PipePair(t testing.TB, l *ioloop.Loop, ring int, ha, hb ioloop.Handler) (*ioloop.Conn, *ioloop.Conn) {
	t.Helper()
	ca, cb, _, _ := Pipes(t, l, ring, 0, ha, hb)
	return ca, cb
}

// Pipes is PipePair in memory whose byte i was fill+i*7 (mod 256) before
// InitPipe (fill 0: as mapped), so that no two words of it are alike, and
// it returns the two Pipes too.
func Pipes(t testing.TB, l *ioloop.Loop, ring int, fill byte, ha, hb ioloop.Handler) (ca, cb *ioloop.Conn, pa, pb *shm.Pipe) {
	t.Helper()
	mem := PipeMem(t, ring, fill)
	var refs atomic.Int32
	refs.Store(2)
	release := func() {
		if refs.Add(-1) == 0 {
			unix.Munmap(mem)
		}
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	if pa, err = shm.Open(mem, 0, fds[0], release); err != nil {
		unix.Close(fds[1])
		release()
		t.Fatal(err)
	}
	if ca, err = l.RegisterStream(pa, 1, ha, nil); err != nil {
		unix.Close(fds[1])
		release()
		t.Fatal(err)
	}
	if pb, err = shm.Open(mem, 1, fds[1], release); err != nil {
		t.Fatal(err)
	}
	if cb, err = l.RegisterStream(pb, 2, hb, nil); err != nil {
		t.Fatal(err)
	}
	return ca, cb, pa, pb
}

// PipeMem maps anonymous shared memory for a pipe with rings of ring
// bytes, its byte i set to fill+i*7 (mod 256) unless fill is 0, and
// prepares it (InitPipe). The caller unmaps it.
func PipeMem(t testing.TB, ring int, fill byte) []byte {
	t.Helper()
	page := unix.Getpagesize()
	size := (shm.PipeSize(ring) + page - 1) / page * page
	mem, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_ANON)
	if err != nil {
		t.Fatal(err)
	}
	if fill != 0 {
		for i := range mem {
			mem[i] = fill + byte(i*7)
		}
	}
	if err := shm.InitPipe(mem, ring); err != nil {
		unix.Munmap(mem)
		t.Fatal(err)
	}
	return mem
}

// RawPipe registers side 0 of a new pipe with rings of ring bytes on l
// (connection 3, handler h) and opens side 1 without registering it, for
// the test to play the other process with its Writev and Read (arm
// false); bell is side 1's bell. The memory is unmapped when the test
// ends.
func RawPipe(t testing.TB, l *ioloop.Loop, ring int, h ioloop.Handler) (c *ioloop.Conn, raw *shm.Pipe, bell int, mem []byte) {
	t.Helper()
	mem = PipeMem(t, ring, 0)
	t.Cleanup(func() { unix.Munmap(mem) })
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	if raw, err = shm.Open(mem, 1, fds[1], nil); err != nil {
		unix.Close(fds[0])
		t.Fatal(err)
	}
	p, err := shm.Open(mem, 0, fds[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	if c, err = l.RegisterStream(p, 3, h, nil); err != nil {
		t.Fatal(err)
	}
	return c, raw, fds[1], mem
}
