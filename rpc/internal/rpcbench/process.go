package rpcbench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/rpc"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/engine"
	bmrpc "github.com/boltmesh/boltmesh/rpc"
)

// Cross-process mode: the server of each implementation runs in a child
// process, the test binary re-executed with serverEnv naming the server;
// the binary's TestMain hands it to ServeIfChild, which runs it instead of
// the tests. The child prints one line on stdout once serving (readyPrefix
// and the address to dial, or "ready") and serves until its stdin reaches EOF: the parent
// closes it to stop the child, and so does the parent's death. A listener
// passed down by the parent is the child's fd 3.
const (
	serverEnv = "BOLTMESH_RPCBENCH_SERVER"
	addrsEnv  = "BOLTMESH_RPCBENCH_ADDRS" // boltmesh: the mesh's addresses
	// readyPrefix starts the ready line, telling it from a test binary's
	// own output (a binary without the TestMain hook runs no tests and
	// prints PASS).
	readyPrefix = "rpcbench-ready "
)

const (
	// readyWithin bounds how long a child takes to start serving.
	readyWithin = 30 * time.Second
	// exitWithin bounds how long a child takes to exit once told to; it is
	// killed after that.
	exitWithin = 5 * time.Second
)

// Server runs one implementation's server in a child process: it calls
// ready with the line the parent waits for (the address to dial) once
// serving, and returns once stop is closed.
type Server func(ready func(line string), stop <-chan struct{}) error

// servers are the servers of this package; ServeIfChild adds others (gRPC's,
// in grpcbench).
var servers = map[string]Server{"boltmesh": serveBoltmesh, "netrpc": serveNetRPC}

// ServeIfChild returns at once unless this process is a benchmark server
// started by StartServer; then it runs the server named in its environment,
// one of this package's or of extra, and exits. A test binary whose
// benchmarks use StartServer (RemoteBoltmesh, RemoteNetRPC) calls it first
// thing in TestMain.
func ServeIfChild(extra map[string]Server) {
	name := os.Getenv(serverEnv)
	if name == "" {
		return
	}
	srv := extra[name]
	if srv == nil {
		srv = servers[name]
	}
	err := errors.New("no such server")
	if srv != nil {
		stop := make(chan struct{})
		go func() { // EOF: the parent closed stdin or died
			io.Copy(io.Discard, os.Stdin)
			close(stop)
		}()
		err = srv(func(line string) { fmt.Println(readyPrefix + line) }, stop)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "rpcbench server %s: %v\n", name, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// coreShare is each process's share of the cores when the client and the
// server share this machine, as the boltmesh CLI gives co-located ranks
// (cmd/boltmesh/cores.go): NumCPU/2, at least 1.
func coreShare() int { return max(1, runtime.NumCPU()/2) }

// Child is a benchmark server running in a child process.
type Child struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	lines   chan string // the ready line, then closed at EOF
	exited  chan struct{}
	waitErr error
	restore func()
	once    sync.Once
}

// StartServer starts the server named name (see ServeIfChild) in a child
// process: this test binary (os.Args[0]) re-executed, with env added to its
// environment and ln, unless nil, passed down as its fd 3 (and closed
// here). Unless GOMAXPROCS is set in the environment, which then stands
// for both, the child and, until Stop, this process each get their share
// of the cores (coreShare), the same for every implementation. Ready waits
// until it serves; Stop, also run at tb's cleanup, ends it.
func StartServer(tb testing.TB, name string, ln net.Listener, env ...string) *Child {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$", "-test.bench=^$")
	cmd.Env = append(append(os.Environ(), serverEnv+"="+name), env...)
	c := &Child{cmd: cmd, lines: make(chan string, 1), exited: make(chan struct{}), restore: func() {}}
	if os.Getenv("GOMAXPROCS") == "" {
		n := coreShare()
		cmd.Env = append(cmd.Env, "GOMAXPROCS="+strconv.Itoa(n))
		prev := runtime.GOMAXPROCS(n)
		c.restore = func() { runtime.GOMAXPROCS(prev) }
	}
	if ln != nil {
		f, err := ln.(*net.TCPListener).File()
		ln.Close()
		if err != nil {
			c.restore()
			tb.Fatal(err)
		}
		defer f.Close()
		cmd.ExtraFiles = []*os.File{f}
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		c.restore()
		tb.Fatal(err)
	}
	defer pw.Close()
	cmd.Stdout, cmd.Stderr = pw, os.Stderr
	if c.stdin, err = cmd.StdinPipe(); err != nil {
		pr.Close()
		c.restore()
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		pr.Close()
		c.restore()
		tb.Fatal(err)
	}
	go func() {
		c.waitErr = cmd.Wait()
		close(c.exited)
	}()
	go func() { // the ready line; any other output goes to stderr
		defer pr.Close()
		defer close(c.lines)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if line, ok := strings.CutPrefix(sc.Text(), readyPrefix); ok {
				c.lines <- line
				break
			}
			fmt.Fprintln(os.Stderr, sc.Text())
		}
		io.Copy(os.Stderr, pr)
	}()
	tb.Cleanup(c.Stop)
	return c
}

// Ready waits until the child serves and returns the line it printed.
func (c *Child) Ready(tb testing.TB) string {
	tb.Helper()
	select {
	case line, ok := <-c.lines:
		if ok {
			return line
		}
		<-c.exited
		tb.Fatalf("rpcbench: server %s exited before serving (%v); does this test binary's TestMain call rpcbench.ServeIfChild?", c.name(), c.waitErr)
	case <-time.After(readyWithin):
		tb.Fatalf("rpcbench: server %s not serving within %v", c.name(), readyWithin)
	}
	return ""
}

func (c *Child) name() string {
	for _, e := range c.cmd.Env {
		if v, ok := strings.CutPrefix(e, serverEnv+"="); ok {
			return v
		}
	}
	return "?"
}

// Signal tells the child to stop (closes its stdin) without waiting.
func (c *Child) Signal() { c.stdin.Close() }

// Stop tells the child to stop, kills it unless it exits within exitWithin,
// reaps it and restores this process's GOMAXPROCS. It may be called more
// than once.
func (c *Child) Stop() {
	c.once.Do(func() {
		c.Signal()
		select {
		case <-c.exited:
		case <-time.After(exitWithin):
			c.cmd.Process.Kill()
			<-c.exited
		}
		c.restore()
	})
}

// RemoteBoltmesh is Boltmesh with rank 1, the server, in a child process:
// this process pre-binds both listeners and passes the child its own.
func RemoteBoltmesh(b *testing.B) (CallFunc, func()) {
	lns := make([]net.Listener, 2)
	addrs := make([]string, 2)
	for r := range lns {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		lns[r], addrs[r] = ln, ln.Addr().String()
	}
	child := StartServer(b, "boltmesh", lns[1], addrsEnv+"="+strings.Join(addrs, ","))
	t, err := engine.FromListener(0, 2, lns[0], addrs, engine.Options{})
	if err != nil {
		b.Fatal(err)
	}
	a, err := bmrpc.NewAgent(t, bmrpc.Options{Logger: slog.Default()})
	if err != nil {
		t.Close()
		b.Fatal(err)
	}
	child.Ready(b)
	ctx := context.Background()
	call := func(args []byte) ([]byte, error) { return a.Call(ctx, 1, "echo", args) }
	return call, func() {
		child.Signal() // both ranks shut down together
		ctx, cancel := context.WithTimeout(ctx, exitWithin)
		defer cancel()
		if err := a.Shutdown(ctx); err != nil {
			b.Error(err)
		}
		t.Close()
		child.Stop()
	}
}

// serveBoltmesh is rank 1 of RemoteBoltmesh's mesh.
func serveBoltmesh(ready func(string), stop <-chan struct{}) error {
	ln, err := net.FileListener(os.NewFile(3, "listener"))
	if err != nil {
		return err
	}
	addrs := strings.Split(os.Getenv(addrsEnv), ",")
	t, err := engine.FromListener(1, len(addrs), ln, addrs, engine.Options{})
	if err != nil {
		return err
	}
	defer t.Close()
	echo := func(_ context.Context, args []byte) ([]byte, error) { return args, nil }
	a, err := bmrpc.NewAgent(t, bmrpc.Options{Handlers: map[string]bmrpc.Handler{"echo": echo}, Logger: slog.Default()})
	if err != nil {
		return err
	}
	ready("ready")
	<-stop
	ctx, cancel := context.WithTimeout(context.Background(), exitWithin)
	defer cancel()
	return a.Shutdown(ctx)
}

// RemoteNetRPC is NetRPC with the server in a child process.
func RemoteNetRPC(b *testing.B) (CallFunc, func()) {
	child := StartServer(b, "netrpc", nil)
	cl, err := rpc.Dial("tcp", child.Ready(b))
	if err != nil {
		b.Fatal(err)
	}
	return netRPCCall(cl), func() {
		cl.Close()
		child.Stop()
	}
}

func netRPCCall(cl *rpc.Client) CallFunc {
	return func(args []byte) ([]byte, error) {
		var reply []byte
		err := cl.Call("Echo.Echo", args, &reply)
		return reply, err
	}
}

// serveNetRPC is RemoteNetRPC's server.
func serveNetRPC(ready func(string), stop <-chan struct{}) error {
	srv := rpc.NewServer()
	if err := srv.Register(Echo{}); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go srv.ServeConn(c)
		}
	}()
	ready(ln.Addr().String())
	<-stop
	return ln.Close() // the process exits, closing the connections
}
