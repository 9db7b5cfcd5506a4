// Package childproc runs ranks of a multi-process test as child processes
// of the test binary, for the tests of boltmesh's packages: the binary
// re-executes itself with a role in its environment, and the package's
// TestMain (Main) runs that role instead of the tests. A child may inherit
// a listener as fd 3; its stdin is a pipe whose write end the parent
// holds, so that a child that reads it (Wait for the parent) exits when
// the parent dies.
package childproc

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// The environment of a child.
const (
	roleEnv     = "BOLTMESH_TEST_ROLE"
	rankEnv     = "BOLTMESH_TEST_RANK"
	addrsEnv    = "BOLTMESH_TEST_ADDRS"
	listenerEnv = "BOLTMESH_TEST_LISTENER" // set when the child inherits a listener as fd 3
)

// Child is what a child process was started with.
type Child struct {
	Role     string
	Rank     int
	Addrs    []string     // every rank's address, in rank order
	Listener net.Listener // inherited as fd 3, or nil if the parent passed none
}

// Lasting are goleak's options for the goroutines that live as long as
// the process by design: the sealed links' crew (internal/link/sealed).
var Lasting = []goleak.Option{goleak.IgnoreAnyFunction("github.com/boltmesh/boltmesh/internal/link/sealed.crewWork")}

// Main is a test package's TestMain: in a child process it runs run with
// the child's Role, Rank, Addrs and Listener and exits 0, or 1 after
// printing run's error to stderr; otherwise it runs the tests and checks
// that no goroutine leaked.
func Main(m *testing.M, run func(Child) error) {
	role := os.Getenv(roleEnv)
	if role == "" {
		goleak.VerifyTestMain(m, Lasting...)
		return
	}
	c, err := child(role)
	if err == nil {
		err = run(c)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "child %s rank %s: %v\n", role, os.Getenv(rankEnv), err)
		os.Exit(1)
	}
	os.Exit(0)
}

func child(role string) (Child, error) {
	c := Child{Role: role}
	var err error
	if c.Rank, err = strconv.Atoi(os.Getenv(rankEnv)); err != nil {
		return c, fmt.Errorf("%s: %w", rankEnv, err)
	}
	if a := os.Getenv(addrsEnv); a != "" {
		c.Addrs = strings.Split(a, ",")
	}
	if os.Getenv(listenerEnv) != "" {
		if c.Listener, err = net.FileListener(os.NewFile(3, "listener")); err != nil {
			return c, fmt.Errorf("the inherited listener: %w", err)
		}
	}
	return c, nil
}

// Spec says how to start a child.
type Spec struct {
	Role     string
	Rank     int
	Addrs    []string
	Listener net.Listener // passed down as fd 3 and closed in the parent; nil for none
	Env      []string     // extra environment, "K=V"
	Stdout   io.Writer    // the child's stdout; nil: the parent's
}

// Command returns the child's command, not started, for a caller that
// needs more control (a stdout pipe, limits) than Start gives; the caller
// closes the *os.File of the listener (cmd.ExtraFiles[0]) once the child
// has started, and reaps the child. It fails if the listener cannot be
// duplicated.
func Command(s Spec) (*exec.Cmd, error) {
	cmd := exec.CommandContext(context.Background(), os.Args[0], "-test.run=^$", "-test.bench=^$")
	cmd.Env = append(os.Environ(), roleEnv+"="+s.Role, rankEnv+"="+strconv.Itoa(s.Rank), addrsEnv+"="+strings.Join(s.Addrs, ","))
	cmd.Env = append(cmd.Env, s.Env...)
	if s.Listener != nil {
		f, err := s.Listener.(*net.TCPListener).File()
		if err != nil {
			return nil, err
		}
		s.Listener.Close()
		cmd.ExtraFiles = []*os.File{f}
		cmd.Env = append(cmd.Env, listenerEnv+"=1")
	}
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if s.Stdout != nil {
		cmd.Stdout = s.Stdout
	}
	return cmd, nil
}

// Proc is a child process that Start started. Its Cmd's Wait is Proc's:
// Proc reaps the child itself.
type Proc struct {
	*exec.Cmd
	Rank  int
	stdin *os.File // the write end of the child's stdin
	done  chan struct{}
	err   error // Cmd.Wait's, once done is closed
}

// Start starts a child as s says. At t's cleanup the child's stdin is
// closed, and a child still running is killed and reaped.
func Start(t testing.TB, s Spec) *Proc {
	t.Helper()
	cmd, err := Command(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range cmd.ExtraFiles {
		defer f.Close()
	}
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdinR.Close()
	cmd.Stdin = stdinR
	if err := cmd.Start(); err != nil {
		stdinW.Close()
		t.Fatal(err)
	}
	p := &Proc{Cmd: cmd, Rank: s.Rank, stdin: stdinW, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.stdin.Close()
		select {
		case <-p.done:
		default:
			cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// Wait waits for the child to exit and returns its error (an
// *exec.ExitError for a non-zero exit, or one for the signal that killed
// it).
func (p *Proc) Wait() error {
	<-p.done
	return p.err
}

// Done is closed once the child has exited.
func (p *Proc) Done() <-chan struct{} { return p.done }

// WaitFor waits up to timeout for the child to exit and returns its
// error; a child still running after timeout is killed, and then the
// error says so.
func (p *Proc) WaitFor(timeout time.Duration) error {
	select {
	case <-p.done:
		return p.err
	case <-time.After(timeout):
		p.Process.Kill()
		<-p.done
		return fmt.Errorf("rank %d did not exit within %v", p.Rank, timeout)
	}
}

// CloseStdin closes the child's stdin: a child waiting on it goes on.
func (p *Proc) CloseStdin() error { return p.stdin.Close() }
