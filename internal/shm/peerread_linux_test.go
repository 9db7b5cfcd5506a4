//go:build linux

package shm_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"testing"
	"unsafe"

	"github.com/boltmesh/boltmesh/internal/shm"
	"golang.org/x/sys/unix"
)

// TestReadProcess: ReadProcess copies the bytes at an address, here of
// this process (a neighbour's reads are tested with real processes in
// engine/collective), without allocating; an address not mapped is
// EFAULT, and a process that exited ESRCH.
func TestReadProcess(t *testing.T) {
	src := make([]byte, 3<<20+5)
	for i := range src {
		src[i] = pattern(0x17, i)
	}
	dst := make([]byte, len(src))
	addr := uintptr(unsafe.Pointer(&src[0]))
	if err := shm.ReadProcess(os.Getpid(), addr, dst); err != nil {
		if errors.Is(err, unix.EPERM) || errors.Is(err, unix.ENOSYS) {
			t.Skipf("process_vm_readv refused here: %v", err)
		}
		t.Fatal(err)
	}
	if !bytes.Equal(dst, src) {
		t.Fatal("ReadProcess copied other bytes")
	}
	small := dst[:64]
	if allocs := testing.AllocsPerRun(100, func() {
		if err := shm.ReadProcess(os.Getpid(), addr+7, small); err != nil {
			t.Fatal(err)
		}
	}); allocs != 0 {
		t.Errorf("ReadProcess allocates %v times a call", allocs)
	}
	if !bytes.Equal(small, src[7:71]) {
		t.Error("ReadProcess at an offset copied other bytes")
	}
	if err := shm.ReadProcess(os.Getpid(), 4096, small); !errors.Is(err, unix.EFAULT) {
		t.Errorf("ReadProcess of an unmapped address = %v, want EFAULT", err)
	}
	c := exec.Command("true")
	if err := c.Run(); err != nil {
		t.Skipf("no true(1): %v", err)
	}
	if err := shm.ReadProcess(c.Process.Pid, addr, small); !errors.Is(err, unix.ESRCH) {
		t.Errorf("ReadProcess of an exited process = %v, want ESRCH", err)
	}
}
