//go:build linux

package ioloop

import (
	"os"

	"golang.org/x/sys/unix"
)

// poller collects readiness with edge-triggered epoll. Its fd is itself
// pollable: the Loop parks on it in Go's network poller instead of blocking
// a thread in epoll_wait. wake makes it readable through an eventfd.
type poller struct {
	fd     int
	wakeFd int
	raw    []unix.EpollEvent
	ready  []event
}

func newPoller(size int) (*poller, error) {
	fd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("epoll_create1", err)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, os.NewSyscallError("fcntl", err)
	}
	wfd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		unix.Close(fd)
		return nil, os.NewSyscallError("eventfd", err)
	}
	p := &poller{fd: fd, wakeFd: wfd, raw: make([]unix.EpollEvent, size), ready: make([]event, 0, size)}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(wfd)}
	if err := unix.EpollCtl(fd, unix.EPOLL_CTL_ADD, wfd, &ev); err != nil {
		p.close()
		unix.Close(fd)
		return nil, os.NewSyscallError("epoll_ctl", err)
	}
	return p, nil
}

// add registers fd for edge-triggered read and write readiness.
func (p *poller) add(fd int) error {
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLOUT | unix.EPOLLRDHUP | unix.EPOLLET, Fd: int32(fd)}
	return os.NewSyscallError("epoll_ctl", unix.EpollCtl(p.fd, unix.EPOLL_CTL_ADD, fd, &ev))
}

// del removes fd from the interest set.
func (p *poller) del(fd int) error {
	return os.NewSyscallError("epoll_ctl", unix.EpollCtl(p.fd, unix.EPOLL_CTL_DEL, fd, nil))
}

// wait returns the fds that became ready, without blocking. The slice is
// valid until the next call.
func (p *poller) wait() ([]event, error) {
	n, err := unix.EpollWait(p.fd, p.raw, 0)
	if err == unix.EINTR {
		return p.ready[:0], nil
	}
	if err != nil {
		return nil, os.NewSyscallError("epoll_wait", err)
	}
	p.ready = p.ready[:0]
	for _, ev := range p.raw[:n] {
		if int(ev.Fd) == p.wakeFd {
			p.drainWake()
			continue
		}
		bad := ev.Events&(unix.EPOLLERR|unix.EPOLLHUP|unix.EPOLLRDHUP) != 0
		p.ready = append(p.ready, event{
			fd:       int(ev.Fd),
			readable: bad || ev.Events&unix.EPOLLIN != 0,
			writable: bad || ev.Events&unix.EPOLLOUT != 0,
		})
	}
	return p.ready, nil
}

// wake makes a blocked or the next wait return.
func (p *poller) wake() error {
	one := [8]byte{1}
	_, err := unix.Write(p.wakeFd, one[:])
	if err == unix.EAGAIN {
		return nil // the counter is already non-zero: a wake-up is pending
	}
	return os.NewSyscallError("write", err)
}

func (p *poller) drainWake() {
	var buf [8]byte
	unix.Read(p.wakeFd, buf[:])
}

// close releases the wake-up fd; the poller fd belongs to the os.File the
// Loop made of it.
func (p *poller) close() error {
	return os.NewSyscallError("close", unix.Close(p.wakeFd))
}
