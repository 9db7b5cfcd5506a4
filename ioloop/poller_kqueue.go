//go:build darwin || freebsd || netbsd || openbsd

package ioloop

import (
	"os"

	"golang.org/x/sys/unix"
)

// poller collects readiness with kqueue (EV_CLEAR, i.e. edge-triggered).
// Its fd is itself pollable: the Loop parks on it in Go's network poller
// instead of blocking a thread in kevent. wake makes it readable through a
// non-blocking pipe, which every BSD has.
type poller struct {
	fd    int
	wakeR int
	wakeW int
	raw   []unix.Kevent_t
	ready []event
}

func newPoller(size int) (*poller, error) {
	fd, err := unix.Kqueue()
	if err != nil {
		return nil, os.NewSyscallError("kqueue", err)
	}
	unix.CloseOnExec(fd)
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, os.NewSyscallError("fcntl", err)
	}
	var pipe [2]int
	if err := unix.Pipe(pipe[:]); err != nil {
		unix.Close(fd)
		return nil, os.NewSyscallError("pipe", err)
	}
	p := &poller{fd: fd, wakeR: pipe[0], wakeW: pipe[1], raw: make([]unix.Kevent_t, size), ready: make([]event, 0, size)}
	for _, f := range pipe {
		unix.CloseOnExec(f)
		if err := unix.SetNonblock(f, true); err != nil {
			p.close()
			unix.Close(fd)
			return nil, os.NewSyscallError("fcntl", err)
		}
	}
	if err := p.ctl(p.wakeR, unix.EVFILT_READ, unix.EV_ADD|unix.EV_CLEAR); err != nil {
		p.close()
		unix.Close(fd)
		return nil, err
	}
	return p, nil
}

func (p *poller) ctl(fd int, filter int, flags int) error {
	var ev [1]unix.Kevent_t
	unix.SetKevent(&ev[0], fd, filter, flags)
	_, err := unix.Kevent(p.fd, ev[:], nil, nil)
	return os.NewSyscallError("kevent", err)
}

// add registers fd for edge-triggered read and write readiness.
func (p *poller) add(fd int) error {
	if err := p.ctl(fd, unix.EVFILT_READ, unix.EV_ADD|unix.EV_CLEAR); err != nil {
		return err
	}
	return p.ctl(fd, unix.EVFILT_WRITE, unix.EV_ADD|unix.EV_CLEAR)
}

// del removes fd from the interest set.
func (p *poller) del(fd int) error {
	err := p.ctl(fd, unix.EVFILT_READ, unix.EV_DELETE)
	if err2 := p.ctl(fd, unix.EVFILT_WRITE, unix.EV_DELETE); err == nil {
		err = err2
	}
	return err
}

// wait returns the fds that became ready, without blocking. The slice is
// valid until the next call.
func (p *poller) wait() ([]event, error) {
	n, err := unix.Kevent(p.fd, nil, p.raw, &unix.Timespec{})
	if err == unix.EINTR {
		return p.ready[:0], nil
	}
	if err != nil {
		return nil, os.NewSyscallError("kevent", err)
	}
	p.ready = p.ready[:0]
	for _, ev := range p.raw[:n] {
		fd := int(ev.Ident)
		if fd == p.wakeR {
			p.drainWake()
			continue
		}
		bad := ev.Flags&(unix.EV_EOF|unix.EV_ERROR) != 0
		p.ready = append(p.ready, event{
			fd:       fd,
			readable: bad || ev.Filter == unix.EVFILT_READ,
			writable: bad || ev.Filter == unix.EVFILT_WRITE,
		})
	}
	return p.ready, nil
}

// wake makes a blocked or the next wait return.
func (p *poller) wake() error {
	_, err := unix.Write(p.wakeW, []byte{1})
	if err == unix.EAGAIN {
		return nil // the pipe is full: a wake-up is pending
	}
	return os.NewSyscallError("write", err)
}

func (p *poller) drainWake() {
	var buf [64]byte
	for {
		if n, _ := unix.Read(p.wakeR, buf[:]); n <= 0 {
			return
		}
	}
}

// close releases the wake-up pipe; the poller fd belongs to the os.File
// the Loop made of it.
func (p *poller) close() error {
	unix.Close(p.wakeR)
	return os.NewSyscallError("close", unix.Close(p.wakeW))
}
