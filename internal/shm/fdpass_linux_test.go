//go:build linux

package shm_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/internal/shm"
	"golang.org/x/sys/unix"
)

func TestSendRecvFDs(t *testing.T) {
	a, b := connPair(t)
	fd1, fd2 := create(t, 4096), create(t, 8192)
	big := make([]byte, shm.MaxMsg)
	for i := range big {
		big[i] = pattern(3, i)
	}
	msgs := []struct {
		msg []byte
		fds []int
	}{{[]byte("heap"), []int{fd1, fd2}}, {[]byte("x"), nil}, {big, []int{fd1}}, {[]byte("tail"), nil}}
	// A small send buffer makes the MaxMsg message go in several writes.
	sendFD, _ := a.SyscallConn()
	sendFD.Control(func(fd uintptr) { unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUF, 4096) })
	done := make(chan error, 1)
	go func() {
		for _, m := range msgs {
			if err := shm.SendFDs(a, m.msg, m.fds...); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	buf := make([]byte, shm.MaxMsg)
	b.SetReadDeadline(time.Now().Add(20 * time.Second))
	for i, m := range msgs {
		n, fds, err := shm.RecvFDs(b, buf, 4)
		if err != nil {
			t.Fatalf("message %d: RecvFDs: %v", i, err)
		}
		if !bytes.Equal(buf[:n], m.msg) {
			t.Fatalf("message %d: got %d bytes, want %d, or contents differ", i, n, len(m.msg))
		}
		if len(fds) != len(m.fds) {
			t.Fatalf("message %d: got %d fds, want %d", i, len(fds), len(m.fds))
		}
		for j, fd := range fds {
			if !sameObject(t, fd, m.fds[j]) {
				t.Fatalf("message %d: fd %d is not the object sent", i, j)
			}
			if flags, _ := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); flags&unix.FD_CLOEXEC == 0 {
				t.Fatalf("message %d: received fd %d not close-on-exec", i, j)
			}
			unix.Close(fd)
		}
	}
	if err := <-done; err != nil {
		t.Fatalf("SendFDs: %v", err)
	}
}

func TestRecvFDsRefusesExtraFDs(t *testing.T) {
	for _, tc := range []struct{ sent, max int }{{3, 0}, {3, 1}, {3, 2}, {2, 1}, {1, 0}} {
		a, b := connPair(t)
		sent := make([]int, tc.sent)
		for i := range sent {
			sent[i] = create(t, 4096)
		}
		before := openFDs(t)
		if err := shm.SendFDs(a, []byte("fds"), sent...); err != nil {
			t.Fatal(err)
		}
		if err := shm.SendFDs(a, []byte("next")); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 16)
		b.SetReadDeadline(time.Now().Add(20 * time.Second))
		n, fds, err := shm.RecvFDs(b, buf, tc.max)
		var fe *shm.FDError
		if !errors.Is(err, shm.ErrTruncated) || !errors.As(err, &fe) || n != 0 || fds != nil {
			t.Fatalf("sent %d, max %d: RecvFDs = %d, %v, %v; want an *FDError wrapping ErrTruncated", tc.sent, tc.max, n, fds, err)
		}
		if after := openFDs(t); after != before {
			t.Fatalf("sent %d, max %d: %d fds open before, %d after: leaked", tc.sent, tc.max, before, after)
		}
		// The refused message was read whole: the next one is intact.
		n, fds, err = shm.RecvFDs(b, buf, tc.max)
		if err != nil || string(buf[:n]) != "next" || fds != nil {
			t.Fatalf("sent %d, max %d: next RecvFDs = %q, %v, %v", tc.sent, tc.max, buf[:n], fds, err)
		}
	}
}

func TestRecvFDsTooLong(t *testing.T) {
	a, b := connPair(t)
	fd := create(t, 4096)
	before := openFDs(t)
	if err := shm.SendFDs(a, []byte("0123456789"), fd); err != nil {
		t.Fatal(err)
	}
	b.SetReadDeadline(time.Now().Add(20 * time.Second))
	_, fds, err := shm.RecvFDs(b, make([]byte, 9), 1)
	var me *shm.MessageError
	if !errors.Is(err, shm.ErrTooLong) || !errors.As(err, &me) || me.Len != 10 || me.Max != 9 || fds != nil {
		t.Fatalf("RecvFDs(10-byte message, 9-byte buf) = %v, %v; want a *MessageError wrapping ErrTooLong", fds, err)
	}
	if after := openFDs(t); after != before {
		t.Fatalf("%d fds open before, %d after: the fd that came was not closed", before, after)
	}
}

func TestSendFDsBadLength(t *testing.T) {
	a, _ := connPair(t)
	if err := shm.SendFDs(a, nil); !errors.Is(err, shm.ErrEmpty) {
		t.Fatalf("SendFDs(empty) = %v, want ErrEmpty", err)
	}
	if err := shm.SendFDs(a, make([]byte, shm.MaxMsg+1)); !errors.Is(err, shm.ErrTooLong) {
		t.Fatalf("SendFDs(MaxMsg+1) = %v, want ErrTooLong", err)
	}
}

func TestRecvFDsEOFAndDeadline(t *testing.T) {
	a, b := connPair(t)
	b.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	if _, _, err := shm.RecvFDs(b, make([]byte, 8), 1); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("RecvFDs past the deadline = %v, want os.ErrDeadlineExceeded", err)
	}
	b.SetReadDeadline(time.Now().Add(20 * time.Second))
	a.Write([]byte{5, 0, 0, 0, 'a', 'b'}) // a 5-byte message cut after 2 bytes
	a.Close()
	if _, _, err := shm.RecvFDs(b, make([]byte, 8), 1); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("RecvFDs of a cut message = %v, want io.ErrUnexpectedEOF", err)
	}
	if _, _, err := shm.RecvFDs(b, make([]byte, 8), 1); !errors.Is(err, io.EOF) {
		t.Fatalf("RecvFDs at EOF = %v, want io.EOF", err)
	}
}

func TestRecvFDsZeroPrefix(t *testing.T) {
	a, b := connPair(t)
	a.Write([]byte{0, 0, 0, 0})
	b.SetReadDeadline(time.Now().Add(20 * time.Second))
	if _, _, err := shm.RecvFDs(b, make([]byte, 8), 1); !errors.Is(err, shm.ErrEmpty) {
		t.Fatalf("RecvFDs of a zero prefix = %v, want ErrEmpty", err)
	}
}
