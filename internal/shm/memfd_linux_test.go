//go:build linux

package shm_test

import (
	"errors"
	"os"
	"testing"
	"unsafe"

	"github.com/boltmesh/boltmesh/internal/shm"
	"golang.org/x/sys/unix"
)

func TestCreateSealedCloexec(t *testing.T) {
	fd := create(t, 3*4096)
	seals, err := unix.FcntlInt(uintptr(fd), unix.F_GET_SEALS, 0)
	want := unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_SEAL
	if err != nil || seals&want != want {
		t.Fatalf("F_GET_SEALS = %#x, %v; want %#x set", seals, err, want)
	}
	if flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil || flags&unix.FD_CLOEXEC == 0 {
		t.Fatalf("F_GETFD = %#x, %v; want FD_CLOEXEC", flags, err)
	}
	if n, err := shm.Size(fd); err != nil || n != 3*4096 {
		t.Fatalf("Size = %d, %v; want %d", n, err, 3*4096)
	}
	if err := shm.Check(fd, 3*4096); err != nil {
		t.Fatalf("Check: %v", err)
	}
	// A holder of the fd (as the receiver would be) can resize it neither way.
	for _, n := range []int64{4096, 4 * 4096, 0} {
		if err := unix.Ftruncate(fd, n); !errors.Is(err, unix.EPERM) {
			t.Fatalf("ftruncate(%d) on a sealed object = %v, want EPERM", n, err)
		}
	}
	// Nor loosen the seals.
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_WRITE); !errors.Is(err, unix.EPERM) {
		t.Fatalf("F_ADD_SEALS after F_SEAL_SEAL = %v, want EPERM", err)
	}
}

func TestCreateBadSize(t *testing.T) {
	for _, n := range []int{0, -1} {
		fd, err := shm.Create("x", n)
		var ae *shm.ArgError
		if !errors.Is(err, shm.ErrSize) || !errors.As(err, &ae) || ae.Arg != "size" || fd != -1 {
			t.Fatalf("Create(%d) = %d, %v; want -1 and an *ArgError wrapping ErrSize", n, fd, err)
		}
	}
}

func TestCheckRefusesUnsealed(t *testing.T) {
	fd, err := unix.MemfdCreate("unsealed", unix.MFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := unix.Ftruncate(fd, 4096); err != nil {
		t.Fatal(err)
	}
	err = shm.Check(fd, 4096)
	var ce *shm.ObjectError
	if !errors.Is(err, shm.ErrNotSealed) || !errors.As(err, &ce) || ce.Field != "seals" {
		t.Fatalf("Check(unsealed memfd) = %v, want a *ObjectError wrapping ErrNotSealed", err)
	}

	// Sealed against growing only: still refused.
	fd2, err := unix.MemfdCreate("grow-only", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd2)
	unix.Ftruncate(fd2, 4096)
	if _, err := unix.FcntlInt(uintptr(fd2), unix.F_ADD_SEALS, unix.F_SEAL_GROW); err != nil {
		t.Fatal(err)
	}
	if err := shm.Check(fd2, 4096); !errors.Is(err, shm.ErrNotSealed) {
		t.Fatalf("Check(memfd sealed GROW only) = %v, want ErrNotSealed", err)
	}

	// A regular file cannot carry seals at all.
	f, err := os.CreateTemp(t.TempDir(), "plain")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.Truncate(4096)
	if err := shm.Check(int(f.Fd()), 4096); !errors.Is(err, shm.ErrNotSealed) {
		t.Fatalf("Check(regular file) = %v, want ErrNotSealed", err)
	}
}

func TestCheckWrongSize(t *testing.T) {
	fd := create(t, 8192)
	for _, want := range []int{4096, 8193, 1 << 20} {
		err := shm.Check(fd, want)
		var ce *shm.ObjectError
		if !errors.Is(err, shm.ErrSize) || !errors.As(err, &ce) || ce.Field != "size" || ce.Got != 8192 || ce.Want != int64(want) {
			t.Fatalf("Check(8192-byte object, %d) = %v, want a size *ObjectError", want, err)
		}
	}
	if err := shm.Check(fd, 0); !errors.Is(err, shm.ErrSize) {
		t.Fatalf("Check(size 0) = %v, want ErrSize", err)
	}
}

func TestMapSharesBytes(t *testing.T) {
	fd := create(t, 2*4096)
	a, err := shm.Map(fd, 2*4096)
	if err != nil {
		t.Fatal(err)
	}
	b, err := shm.Map(fd, 2*4096)
	if err != nil {
		t.Fatal(err)
	}
	a[5000] = 0x5a
	if b[5000] != 0x5a {
		t.Fatalf("second mapping sees %#x, want 0x5a", b[5000])
	}
	if err := errors.Join(shm.Unmap(a), shm.Unmap(b)); err != nil {
		t.Fatal(err)
	}
}

// resident counts the pages of mem that are in core (mincore).
func resident(t *testing.T, mem []byte) int {
	t.Helper()
	vec := make([]byte, (len(mem)+4095)/4096)
	_, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&mem[0])), uintptr(len(mem)), uintptr(unsafe.Pointer(&vec[0])))
	if e != 0 {
		t.Fatal(os.NewSyscallError("mincore", e))
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n
}

func TestPrefaultMakesPagesResident(t *testing.T) {
	const pages = 64
	fd := create(t, pages*4096)
	mem, err := shm.Map(fd, pages*4096)
	if err != nil {
		t.Fatal(err)
	}
	defer shm.Unmap(mem)
	mem[3*4096+1] = 9
	if n := resident(t, mem); n >= pages {
		t.Fatalf("%d of %d pages resident before Prefault; the test needs a sparse object", n, pages)
	}
	shm.Prefault(mem)
	if n := resident(t, mem); n != pages {
		t.Fatalf("%d of %d pages resident after Prefault", n, pages)
	}
	if mem[3*4096+1] != 9 || mem[0] != 0 {
		t.Fatalf("Prefault changed bytes: %d %d", mem[3*4096+1], mem[0])
	}
	// An unaligned subslice works too and changes nothing.
	sub := mem[4097 : 9*4096+3]
	shm.Prefault(sub)
	if mem[3*4096+1] != 9 {
		t.Fatal("Prefault of a subslice changed bytes")
	}
}

func TestTouchMakesPagesResident(t *testing.T) {
	const pages = 16
	fd := create(t, pages*4096)
	mem, err := shm.Map(fd, pages*4096)
	if err != nil {
		t.Fatal(err)
	}
	defer shm.Unmap(mem)
	mem[4096+2] = 7
	shm.Touch(mem[1:]) // unaligned start: the first page's word is at offset 4
	if n := resident(t, mem); n != pages {
		t.Fatalf("%d of %d pages resident after touch", n, pages)
	}
	if mem[4096+2] != 7 || mem[0] != 0 || mem[4] != 0 {
		t.Fatalf("touch changed bytes")
	}
}
