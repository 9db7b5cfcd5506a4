package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"
)

// children are the local ranks 1..n-1 of a local run: this program
// re-executed as "boltmesh rank".
type children struct {
	cmds []*exec.Cmd
	done []chan error
}

// spawn starts ranks 1..world-1 as this program's command child (its
// subcommand, then its own flags), which meet rank 0 at mf.rendezvous,
// in the environment childEnv gives them (with the mesh key key). Their
// output goes to stderr. Every local rank, this one included, gets its
// share of the cores (see coreShare).
func spawn(world int, mf *meshFlags, pf *profFlags, key []byte, stderr io.Writer, child []string) (*children, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("starting local ranks: %w", err)
	}
	c := &children{}
	env := childEnv(os.Environ(), world, mf, key)
	for r := 1; r < world; r++ {
		cmd := exec.Command(exe, childArgs(r, world, mf, pf, child)...)
		cmd.Stdout, cmd.Stderr, cmd.Env = stderr, stderr, env
		if err := cmd.Start(); err != nil {
			c.kill()
			return nil, fmt.Errorf("starting rank %d: %w", r, err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		c.cmds, c.done = append(c.cmds, cmd), append(c.done, done)
	}
	return c, nil
}

// childEnv is the environment of the local ranks of a world of world:
// environ, with GOMAXPROCS set to their share of the cores (shareCores,
// which applies it to this process too) and, unless --key-file names the
// key (childArgs passes the flag on), BOLTMESH_KEY set to the mesh key.
// The key travels in the environment, which only the user's own
// processes can read (/proc/PID/environ), never on the command line,
// which every user can.
func childEnv(environ []string, world int, mf *meshFlags, key []byte) []string {
	var set []string
	if cores, ok := shareCores(world); ok {
		set = append(set, cores)
	}
	if mf.keyFile == "" && len(key) > 0 {
		set = append(set, "BOLTMESH_KEY="+string(key))
	}
	return setEnv(environ, set...)
}

// setEnv returns a copy of environ with each "NAME=value" entry of set
// in place of NAME's entries.
func setEnv(environ []string, set ...string) []string {
	out := make([]string, 0, len(environ)+len(set))
	for _, e := range environ {
		name, _, _ := strings.Cut(e, "=")
		if !slices.ContainsFunc(set, func(s string) bool { return strings.HasPrefix(s, name+"=") }) {
			out = append(out, e)
		}
	}
	return append(out, set...)
}

// childArgs are rank r's command line: child's subcommand, its place, the
// flags every rank must share, then child's own flags. They never hold
// the mesh key itself: only --key-file's file name, if given (childEnv
// hands over any other key).
func childArgs(r, world int, mf *meshFlags, pf *profFlags, child []string) []string {
	args := []string{child[0], "--rank", strconv.Itoa(r), "--world", strconv.Itoa(world),
		"--rendezvous", mf.rendezvous, "--transport", mf.transport, "--timeout", mf.timeout.String(), "--spin", mf.spin.String()}
	if mf.streams != 0 {
		args = append(args, "--streams", strconv.Itoa(mf.streams))
	}
	if mf.force {
		args = append(args, "--force")
	}
	if mf.spinYield != 0 {
		args = append(args, "--spin-yield", mf.spinYield.String())
	}
	for _, f := range [][2]string{{"coordinator", mf.coordinator}, {"stripe-min", mf.stripeMin}, {"single-copy-min", mf.singleCopy}, {"seal", mf.seal}, {"socket-buffer", mf.sockBuf}, {"congestion", mf.congestion}, {"key-file", mf.keyFile}, {"heap", mf.heap}, {"bind", bindHost(mf.bind)},
		{"cpuprofile", pf.cpu}, {"memprofile", pf.mem}, {"mutexprofile", pf.mutex}, {"blockprofile", pf.block}} {
		if f[1] != "" {
			args = append(args, "--"+f[0], f[1])
		}
	}
	return append(args, child[1:]...)
}

// bindHost turns rank 0's --bind into the children's: the same host, any
// port.
func bindHost(bind string) string {
	host, _, err := net.SplitHostPort(bind)
	if bind == "" || err != nil {
		return ""
	}
	return net.JoinHostPort(host, "0")
}

// wait waits for every child to exit, killing those still running after
// d; it returns their failures.
func (c *children) wait(d time.Duration) error {
	timeout := time.After(d)
	var errs []error
	for i, done := range c.done {
		select {
		case err := <-done:
			if err != nil {
				errs = append(errs, fmt.Errorf("rank %d: %w", i+1, err))
			}
			c.done[i] = nil
		case <-timeout:
			c.kill()
			return errors.Join(append(errs, fmt.Errorf("rank %d did not exit within %v", i+1, d))...)
		}
	}
	return errors.Join(errs...)
}

// kill kills the children still running and reaps them.
func (c *children) kill() {
	for i, cmd := range c.cmds {
		if c.done[i] != nil {
			cmd.Process.Kill()
			<-c.done[i]
			c.done[i] = nil
		}
	}
}
