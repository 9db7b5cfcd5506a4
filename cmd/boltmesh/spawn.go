package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"time"
)

// children are the local ranks 1..n-1 of a local run: this program
// re-executed as "boltmesh rank".
type children struct {
	cmds []*exec.Cmd
	done []chan error
}

// spawn starts ranks 1..world-1 as this program's command child (its
// subcommand, then its own flags), which meet rank 0 at mf.rendezvous.
// Their output goes to stderr. Every local rank, this one included, gets its
// share of the cores (see coreShare).
func spawn(world int, mf *meshFlags, pf *profFlags, stderr io.Writer, child []string) (*children, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("starting local ranks: %w", err)
	}
	c := &children{}
	env, share := shareCores(world)
	for r := 1; r < world; r++ {
		cmd := exec.Command(exe, childArgs(r, world, mf, pf, child)...)
		cmd.Stdout, cmd.Stderr = stderr, stderr
		if share {
			cmd.Env = append(os.Environ(), env)
		}
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

// childArgs are rank r's command line: child's subcommand, its place, the
// flags every rank must share, then child's own flags.
func childArgs(r, world int, mf *meshFlags, pf *profFlags, child []string) []string {
	args := []string{child[0], "--rank", strconv.Itoa(r), "--world", strconv.Itoa(world),
		"--rendezvous", mf.rendezvous, "--transport", mf.transport, "--timeout", mf.timeout.String(), "--spin", mf.spin.String()}
	if mf.streams != 0 {
		args = append(args, "--streams", strconv.Itoa(mf.streams))
	}
	if mf.force {
		args = append(args, "--force")
	}
	for _, f := range [][2]string{{"coordinator", mf.coordinator}, {"stripe-min", mf.stripeMin}, {"socket-buffer", mf.sockBuf}, {"congestion", mf.congestion}, {"key-file", mf.keyFile}, {"heap", mf.heap}, {"bind", bindHost(mf.bind)},
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
