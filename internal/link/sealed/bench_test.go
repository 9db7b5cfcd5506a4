package sealed_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/boltmesh/boltmesh/internal/link/sealed"
	"github.com/boltmesh/boltmesh/internal/looptest"
	"github.com/boltmesh/boltmesh/ioloop"
	"golang.org/x/sys/unix"
)

// BenchmarkStream streams messages one way through a sealed pair over a
// unix socket pair (seal, write, read, open), each cipher and size,
// against the bare socket pair ("plain"), and checks the last message
// read.
func BenchmarkStream(b *testing.B) {
	for _, size := range []int{8, 64 << 10, 1 << 20, 16 << 20} {
		for _, kind := range []string{"plain", sealed.AES256GCM.String(), sealed.ChaCha20Poly1305.String()} {
			b.Run(fmt.Sprintf("%s/size=%d", kind, size), func(b *testing.B) {
				var w, r ioloop.Stream
				switch kind {
				case "plain":
					w, r = socketPair(b)
					b.Cleanup(func() { w.Close(); r.Close() })
				case sealed.AES256GCM.String():
					w, r = pair(b, sealed.AES256GCM, sealed.Limits{})
				default:
					w, r = pair(b, sealed.ChaCha20Poly1305, sealed.Limits{})
				}
				msg := looptest.Patterned(uint64(size), min(size, 8<<20))
				if size > len(msg) {
					msg = looptest.Filled(size)
				}
				done := make(chan struct{})
				go func() {
					defer close(done)
					wait := waiter(w.Fd(), unix.POLLOUT)
					vec := make([][]byte, 1)
					for range b.N {
						for vec[0] = msg; len(vec[0]) > 0; {
							n, err := w.Writev(vec)
							if err == unix.EAGAIN {
								wait()
								continue
							}
							if err != nil {
								b.Error(err)
								return
							}
							vec[0] = vec[0][n:]
						}
					}
					flush(b, w)
				}()
				wait := waiter(r.Fd(), unix.POLLIN)
				got := make([]byte, size)
				b.SetBytes(int64(size))
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					for n := 0; n < size; {
						k, err := r.Read(got[n:], true)
						if err == unix.EAGAIN {
							wait()
							continue
						}
						if err != nil {
							b.Fatal(err)
						}
						n += k
					}
				}
				b.StopTimer()
				<-done
				if !bytes.Equal(got, msg) {
					b.Fatal("the last message read differs from the one written")
				}
			})
		}
	}
}

// waiter returns a function that waits, allocating nothing, until fd
// has one of events.
func waiter(fd int, events int16) func() {
	fds := []unix.PollFd{{Fd: int32(fd), Events: events}}
	return func() { unix.Poll(fds, 1000) }
}
