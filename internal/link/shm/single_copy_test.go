package shm_test

import (
	"bytes"
	"errors"
	"os"
	"runtime"
	"testing"
	"unsafe"

	"github.com/boltmesh/boltmesh/internal/link/shm"
)

// TestReadPeer: a copy from this process's own memory (the same system
// call as from a neighbour's) brings the bytes; a range that is not
// mapped, or a process that does not exist, fails with ErrCopyFault and
// writes nothing where the copy could not reach.
func TestReadPeer(t *testing.T) {
	if runtime.GOOS != "linux" {
		if err := shm.ReadPeer(os.Getpid(), 1, make([]byte, 8)); !errors.Is(err, shm.ErrNoSingleCopy) {
			t.Fatalf("ReadPeer = %v, want ErrNoSingleCopy", err)
		}
		return
	}
	src := make([]byte, 3<<20+5)
	for i := range src {
		src[i] = byte(i * 7)
	}
	dst := make([]byte, len(src))
	if err := shm.ReadPeer(os.Getpid(), uint64(uintptr(unsafe.Pointer(&src[0]))), dst); err != nil || !bytes.Equal(dst, src) {
		t.Fatalf("ReadPeer = %v; bytes equal %v", err, bytes.Equal(dst, src))
	}
	if err := shm.ReadPeer(os.Getpid(), 4096, make([]byte, 64)); !errors.Is(err, shm.ErrCopyFault) {
		t.Fatalf("ReadPeer of an unmapped page = %v, want ErrCopyFault", err)
	}
	if err := shm.ReadPeer(1<<22+7, uint64(uintptr(unsafe.Pointer(&src[0]))), make([]byte, 64)); !errors.Is(err, shm.ErrCopyFault) {
		t.Fatalf("ReadPeer of no process = %v, want ErrCopyFault", err)
	}
	if err := shm.ReadPeer(os.Getpid(), 0, nil); err != nil {
		t.Fatalf("ReadPeer of nothing = %v", err)
	}
}

// TestReadPeerAllocs: a copy allocates nothing.
func TestReadPeerAllocs(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("no single copy on this system")
	}
	src, dst := make([]byte, 64<<10), make([]byte, 64<<10)
	addr := uint64(uintptr(unsafe.Pointer(&src[0])))
	if n := testing.AllocsPerRun(100, func() {
		if err := shm.ReadPeer(os.Getpid(), addr, dst); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("ReadPeer allocates %v times per call, want 0", n)
	}
}
