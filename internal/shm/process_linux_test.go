//go:build linux

package shm_test

import (
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/internal/childproc"
	"github.com/boltmesh/boltmesh/internal/shm"
)

// A child process receives the parent's object over the listener, maps
// it and writes a pattern that the parent then reads through its own
// mapping.
func TestChildMapsParentMemory(t *testing.T) {
	l, err := shm.Listen()
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	fd := create(t, childSize)
	mem, err := shm.Map(fd, childSize)
	if err != nil {
		t.Fatal(err)
	}
	defer shm.Unmap(mem)
	p := childproc.Start(t, childproc.Spec{Role: "mapwrite", Addrs: []string{l.Addr()}})
	accepted := make(chan error, 1)
	go func() {
		c, err := l.Accept()
		if err == nil {
			defer c.Close()
			c.SetDeadline(time.Now().Add(30 * time.Second))
			err = serveChild(t, c, p.Process.Pid, fd)
		}
		accepted <- err
	}()
	select {
	case err := <-accepted:
		if err != nil {
			t.Fatal(err)
		}
	case <-p.Done():
		t.Fatalf("child exited first: %v", p.Wait())
	case <-time.After(60 * time.Second):
		l.Close()
		t.Fatal("child did not connect and answer within 60s")
	}
	if err := p.WaitFor(30 * time.Second); err != nil {
		t.Fatalf("child: %v", err)
	}
	for i := range mem {
		if mem[i] != pattern(0x5c, i) {
			t.Fatalf("byte %d = %#x, want %#x: the child's writes are not in the parent's mapping", i, mem[i], pattern(0x5c, i))
		}
	}
}
