//go:build linux

// Package shm: PROVISIONAL stand-in, replaced by the shmplat branch.
package shm

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

var (
	ErrNotSealed = errors.New("shm: not sealed")
	ErrSize      = errors.New("shm: wrong size")
	ErrTruncated = errors.New("shm: truncated")
	ErrTooLong   = errors.New("shm: too long")
)

func Create(name string, size int) (int, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return -1, os.NewSyscallError("memfd_create", err)
	}
	if err := unix.Ftruncate(fd, int64(size)); err != nil {
		unix.Close(fd)
		return -1, os.NewSyscallError("ftruncate", err)
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_SEAL); err != nil {
		unix.Close(fd)
		return -1, os.NewSyscallError("fcntl", err)
	}
	return fd, nil
}

func Check(fd int, size int) error {
	seals, err := unix.FcntlInt(uintptr(fd), unix.F_GET_SEALS, 0)
	if err != nil || seals&(unix.F_SEAL_SHRINK|unix.F_SEAL_GROW) != unix.F_SEAL_SHRINK|unix.F_SEAL_GROW {
		return ErrNotSealed
	}
	n, err := Size(fd)
	if err != nil {
		return err
	}
	if n != size {
		return ErrSize
	}
	return nil
}

func Size(fd int) (int, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return 0, os.NewSyscallError("fstat", err)
	}
	return int(st.Size), nil
}

func Map(fd int, size int) ([]byte, error) {
	mem, err := unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	return mem, os.NewSyscallError("mmap", err)
}

func Unmap(mem []byte) error { return os.NewSyscallError("munmap", unix.Munmap(mem)) }

func Prefault(mem []byte) {}

func SendFDs(c *net.UnixConn, msg []byte, fds ...int) error {
	b := make([]byte, 4+len(msg))
	binary.LittleEndian.PutUint32(b, uint32(len(msg)))
	copy(b[4:], msg)
	var oob []byte
	if len(fds) > 0 {
		oob = unix.UnixRights(fds...)
	}
	_, _, err := c.WriteMsgUnix(b, oob, nil)
	return err
}

func RecvFDs(c *net.UnixConn, buf []byte, maxFDs int) (int, []int, error) {
	hdr := make([]byte, 4+len(buf))
	oob := make([]byte, unix.CmsgSpace(4*maxFDs))
	var fds []int
	got := 0
	want := -1
	for want < 0 || got < 4+want {
		n, oobn, flags, _, err := c.ReadMsgUnix(hdr[got:], oob)
		if err != nil {
			closeAll(fds)
			return 0, nil, err
		}
		if oobn > 0 {
			msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
			if err == nil {
				for i := range msgs {
					if f, err := unix.ParseUnixRights(&msgs[i]); err == nil {
						fds = append(fds, f...)
					}
				}
			}
		}
		if flags&unix.MSG_CTRUNC != 0 {
			closeAll(fds)
			return 0, nil, ErrTruncated
		}
		if n == 0 {
			closeAll(fds)
			return 0, nil, errors.New("shm: EOF")
		}
		got += n
		if want < 0 && got >= 4 {
			want = int(binary.LittleEndian.Uint32(hdr))
			if want > len(buf) {
				closeAll(fds)
				return 0, nil, ErrTooLong
			}
			hdr = hdr[:4+want]
		}
	}
	copy(buf, hdr[4:4+want])
	return want, fds, nil
}

func closeAll(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}

type Listener struct {
	ln   *net.UnixListener
	addr string
}

func Listen() (*Listener, error) {
	var r [8]byte
	rand.Read(r[:])
	addr := "@bm-" + hex.EncodeToString(r[:])
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: addr, Net: "unix"})
	if err != nil {
		return nil, err
	}
	return &Listener{ln: ln, addr: addr}, nil
}

func (l *Listener) Addr() string                     { return l.addr }
func (l *Listener) Accept() (*net.UnixConn, error) { return l.ln.AcceptUnix() }
func (l *Listener) Close() error                     { return l.ln.Close() }

func Dial(ctx context.Context, addr string) (*net.UnixConn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", addr)
	if err != nil {
		return nil, err
	}
	return c.(*net.UnixConn), nil
}

func PeerCred(c *net.UnixConn) (uid, pid int, err error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return -1, 0, err
	}
	var cred *unix.Ucred
	var cerr error
	raw.Control(func(fd uintptr) { cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED) })
	if cerr != nil {
		return -1, 0, cerr
	}
	return int(cred.Uid), int(cred.Pid), nil
}

func HostID(override string) ([32]byte, error) {
	if override != "" {
		return sha256.Sum256([]byte("override:" + override)), nil
	}
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return [32]byte{}, err
	}
	var st unix.Stat_t
	if err := unix.Stat("/proc/self/ns/net", &st); err != nil {
		return [32]byte{}, err
	}
	return sha256.Sum256([]byte(fmt.Sprintf("%s:%s:%d:%d", runtime.GOOS, boot, st.Dev, st.Ino))), nil
}

func Socketpair() (int, int, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, -1, os.NewSyscallError("socketpair", err)
	}
	return fds[0], fds[1], nil
}
