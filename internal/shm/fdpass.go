//go:build linux || darwin || freebsd || netbsd || openbsd

package shm

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// MaxMsg is the longest message SendFDs sends and RecvFDs accepts.
const MaxMsg = 1 << 16

// prefixLen is the size of a message's length prefix: a little-endian
// uint32.
const prefixLen = 4

// SendFDs writes msg (1..MaxMsg bytes) as one message on c: its length as
// a 4-byte little-endian prefix, then msg, with fds attached (SCM_RIGHTS)
// to the first bytes. The fds stay the caller's: the receiver gets
// duplicates. A message of 0 bytes or longer than MaxMsg is a
// *MessageError wrapping ErrEmpty or ErrTooLong, and nothing is sent. It
// honours c's write deadline. After an error mid-message the stream is out
// of step: close c.
func SendFDs(c *net.UnixConn, msg []byte, fds ...int) error {
	if err := checkLen("send", len(msg), MaxMsg); err != nil {
		return err
	}
	b := make([]byte, prefixLen+len(msg))
	binary.LittleEndian.PutUint32(b, uint32(len(msg)))
	copy(b[prefixLen:], msg)
	var oob []byte
	if len(fds) > 0 {
		oob = unix.UnixRights(fds...)
	}
	n, _, err := c.WriteMsgUnix(b, oob, nil)
	if err != nil || n == len(b) {
		return err
	}
	// A stream socket may take part of b; the fds went with its first byte.
	// (Write even of nothing is a write(2), which fails once the peer has
	// gone, so only the rest is written.)
	_, err = c.Write(b[n:])
	return err
}

// RecvFDs reads one message that SendFDs wrote into buf and returns its
// length n and the fds that came with it, close-on-exec and owned by the
// caller (nil if none came). It reads exactly the message's bytes, never
// any of the next message, collecting fds from every recvmsg until the
// message is whole, and honours c's read deadline.
//
// The control buffer holds maxFDs fds. If the kernel dropped fds
// (MSG_CTRUNC) or more than maxFDs came, RecvFDs closes those that came
// and returns an *FDError wrapping ErrTruncated, once the message is read
// whole, so the stream stays in step. A length prefix of 0 or longer than
// buf is a *MessageError wrapping ErrEmpty or ErrTooLong; then, and after
// any I/O error (io.EOF before the first byte, io.ErrUnexpectedEOF
// within a message), the stream is out of step: close c. Every error
// closes the fds that came.
func RecvFDs(c *net.UnixConn, buf []byte, maxFDs int) (n int, fds []int, err error) {
	r := fdReader{c: c, oob: make([]byte, unix.CmsgSpace(4*max(maxFDs, 0)))}
	defer func() {
		if err != nil {
			closeAll(r.fds)
		}
	}()
	var prefix [prefixLen]byte
	if err := r.readFull(prefix[:], true); err != nil {
		return 0, nil, err
	}
	n, err = decodeLen(prefix, len(buf))
	if err != nil {
		return 0, nil, err
	}
	if err := r.readFull(buf[:n], false); err != nil {
		return 0, nil, err
	}
	if r.truncated || len(r.fds) > maxFDs {
		return 0, nil, &FDError{Got: len(r.fds), Max: maxFDs, Truncated: r.truncated}
	}
	return n, r.fds, nil
}

// decodeLen parses a length prefix for a buffer of bufLen bytes: the
// message's length, or a *MessageError (ErrEmpty, ErrTooLong).
func decodeLen(prefix [prefixLen]byte, bufLen int) (int, error) {
	n := binary.LittleEndian.Uint32(prefix[:])
	if uint64(n) > uint64(bufLen) {
		return 0, &MessageError{Op: "recv", Len: int(min(n, 1<<31-1)), Max: bufLen, Err: ErrTooLong}
	}
	if err := checkLen("recv", int(n), bufLen); err != nil {
		return 0, err
	}
	return int(n), nil
}

// checkLen refuses a message length outside 1..limit.
func checkLen(op string, n, limit int) error {
	switch {
	case n == 0:
		return &MessageError{Op: op, Len: n, Max: limit, Err: ErrEmpty}
	case n > limit:
		return &MessageError{Op: op, Len: n, Max: limit, Err: ErrTooLong}
	}
	return nil
}

// fdReader reads a message's bytes and gathers the fds of every recvmsg.
type fdReader struct {
	c         *net.UnixConn
	oob       []byte
	fds       []int
	truncated bool
}

// readFull fills b, collecting fds. first says b starts a message, so that
// EOF before its first byte is io.EOF rather than io.ErrUnexpectedEOF.
func (r *fdReader) readFull(b []byte, first bool) error {
	for got := 0; got < len(b); {
		n, oobn, flags, _, err := r.c.ReadMsgUnix(b[got:], r.oob)
		got += n
		if perr := r.collect(r.oob[:oobn], flags); perr != nil {
			return perr
		}
		if errors.Is(err, io.EOF) && (got > 0 || !first) {
			return io.ErrUnexpectedEOF
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// collect takes the fds out of one recvmsg's control data.
func (r *fdReader) collect(oob []byte, flags int) error {
	if flags&unix.MSG_CTRUNC != 0 {
		r.truncated = true
	}
	if len(oob) == 0 {
		return nil
	}
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return os.NewSyscallError("recvmsg", err)
	}
	for i := range msgs {
		if msgs[i].Header.Level != unix.SOL_SOCKET || msgs[i].Header.Type != unix.SCM_RIGHTS {
			continue
		}
		fds, err := unix.ParseUnixRights(&msgs[i])
		if err != nil {
			return os.NewSyscallError("recvmsg", err)
		}
		r.fds = append(r.fds, fds...)
	}
	return nil
}

// closeAll closes fds.
func closeAll(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}
