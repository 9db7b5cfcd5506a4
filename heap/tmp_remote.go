package heap

// PROVISIONAL stand-in for the shmplat branch's Remote.

import (
	"sync"

	"golang.org/x/sys/unix"
)

type Remote struct {
	mu   sync.Mutex
	mem  []byte
	fd   int
	size uint64
}

func Map(fd int, size uint64) (*Remote, error) {
	mem, err := unix.Mmap(fd, 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	return &Remote{mem: mem, fd: fd, size: size}, nil
}

func (r *Remote) Size() uint64 { return r.size }

func (r *Remote) Slice(off, n uint64) ([]byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mem == nil {
		return nil, ErrClosed
	}
	if off > r.size || n > r.size-off {
		return nil, &RangeError{Offset: off, Len: n, Size: r.size}
	}
	return r.mem[off : off+n : off+n], nil
}

func (r *Remote) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mem == nil {
		return ErrClosed
	}
	unix.Munmap(r.mem)
	unix.Close(r.fd)
	r.mem = nil
	return nil
}
