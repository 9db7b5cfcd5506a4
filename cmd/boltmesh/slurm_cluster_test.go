//go:build linux

package main

import (
	"crypto/rand"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// slurmStartTimeout bounds each step of bringing the cluster up: munged's
// socket, the node turning idle in sinfo, a first srun.
const slurmStartTimeout = 30 * time.Second

// slurmCluster is a one-node Slurm (munged, slurmctld, slurmd) started
// by startSlurm in a temporary directory and stopped at the test's end.
type slurmCluster struct {
	dir     string    // holds slurm.conf, the munge key and socket, spool, state, logs
	conf    string    // slurm.conf, as $SLURM_CONF for srun and sinfo
	node    string    // the node's name: this host's short hostname
	daemons []*daemon // in start order: munged, slurmctld, slurmd
}

// daemon is one process the cluster runs in the foreground, its output
// in a file for the skip message.
type daemon struct {
	name string
	cmd  *exec.Cmd
	out  string // the file holding its stdout and stderr
	done chan error
}

// slurmTools are the programs startSlurm needs (slurm-wlm and munge).
var slurmTools = []string{"munged", "munge", "slurmctld", "slurmd", "srun", "sinfo"}

// startSlurm brings up a one-node Slurm as root: a fresh munge key and
// munged on a socket of its own, slurmctld and slurmd in the foreground
// (-D) on free ports with everything under a temporary directory, and
// waits until sinfo shows the node idle and a 2-task srun of /bin/true
// works. It skips the test, saying what failed, where that cannot be
// done: not root, slurm-wlm or munge not installed, a daemon that does
// not start. The daemons are stopped at cleanup.
func startSlurm(t *testing.T) *slurmCluster {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to run slurmctld and slurmd")
	}
	t.Setenv("PATH", os.Getenv("PATH")+":/usr/sbin:/sbin") // munged, slurmctld, slurmd
	for _, p := range slurmTools {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("%s not found: `make slurm-test` installs slurm-wlm and munge (.ci/run does)", p)
		}
	}
	host, err := os.Hostname()
	if err != nil {
		t.Skipf("no hostname for the node: %v", err)
	}
	c := &slurmCluster{dir: shortTempDir(t), node: strings.SplitN(host, ".", 2)[0]}
	t.Cleanup(c.stop)
	sock := c.startMunge(t)
	c.conf = filepath.Join(c.dir, "slurm.conf")
	if err := os.WriteFile(c.conf, []byte(c.config(sock, daemonPort(t), daemonPort(t))), 0o644); err != nil {
		t.Fatal(err)
	}
	c.start(t, "slurmctld", "slurmctld", "-D", "-c", "-f", c.conf)
	c.start(t, "slurmd", "slurmd", "-D", "-f", c.conf, "-N", c.node)
	c.waitIdle(t)
	if out, err := c.srun(t, 2, nil, "/bin/true"); err != nil {
		c.skip(t, "srun -n2 /bin/true failed: %v\n%s", err, out)
	}
	return c
}

// daemonPort returns a port that nothing listens on, on any interface,
// below the ephemeral ports (32768 and up on Linux) so that no
// connection's local end takes it before the daemon binds it, and below
// the Slurm-derived rendezvous ports.
func daemonPort(t *testing.T) string {
	t.Helper()
	for range 100 {
		p := strconv.Itoa(12000 + mrand.IntN(slurmPortBase-12000))
		if ln, err := net.Listen("tcp", ":"+p); err == nil {
			ln.Close()
			return p
		}
	}
	t.Skip("no free port in 12000-19999 for slurmctld and slurmd")
	return ""
}

// shortTempDir is a temporary directory removed at cleanup, short enough
// for munged's Unix socket path.
func shortTempDir(t *testing.T) string {
	dir := t.TempDir()
	if len(dir) < 60 {
		return dir
	}
	dir, err := os.MkdirTemp("/tmp", "bm-slurm-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// startMunge writes a random key and starts munged with it, returning
// its socket once a credential encodes there.
func (c *slurmCluster) startMunge(t *testing.T) string {
	t.Helper()
	d := filepath.Join(c.dir, "munge")
	if err := os.Mkdir(d, 0o755); err != nil {
		t.Fatal(err)
	}
	key, secret := filepath.Join(d, "munge.key"), make([]byte, 128)
	rand.Read(secret)
	if err := os.WriteFile(key, secret, 0o600); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(d, "sock")
	c.start(t, "munged", "munged", "-F", "-f", "--socket="+sock, "--key-file="+key,
		"--pid-file="+filepath.Join(d, "pid"), "--log-file="+filepath.Join(d, "log"), "--seed-file="+filepath.Join(d, "seed"))
	c.await(t, "munged to encode a credential", func() bool {
		return exec.Command("munge", "-n", "-S", sock).Run() == nil
	})
	return sock
}

// config is slurm.conf for the one node: root runs everything, no
// cgroups, no accounting, tasks tracked by /proc (proctrack/linuxproc),
// at least 2 CPUs (config_overrides lets a 1-CPU machine claim 2).
func (c *slurmCluster) config(sock, ctldPort, slurmdPort string) string {
	var b strings.Builder
	for _, sub := range []string{"state", "spool", "log"} {
		os.Mkdir(filepath.Join(c.dir, sub), 0o755)
	}
	p := func(sub string) string { return filepath.Join(c.dir, sub) }
	fmt.Fprintf(&b, "ClusterName=boltmesh\nSlurmctldHost=%s(127.0.0.1)\n", c.node)
	fmt.Fprintf(&b, "SlurmctldPort=%s\nSlurmdPort=%s\n", ctldPort, slurmdPort)
	fmt.Fprintf(&b, "AuthType=auth/munge\nCredType=cred/munge\nAuthInfo=socket=%s\n", sock)
	b.WriteString("SlurmUser=root\nSlurmdUser=root\n")
	fmt.Fprintf(&b, "StateSaveLocation=%s\nSlurmdSpoolDir=%s\n", p("state"), p("spool"))
	fmt.Fprintf(&b, "SlurmctldPidFile=%s\nSlurmdPidFile=%s\n", p("slurmctld.pid"), p("slurmd.pid"))
	fmt.Fprintf(&b, "SlurmctldLogFile=%s\nSlurmdLogFile=%s\n", p("log/slurmctld.log"), p("log/slurmd.log"))
	b.WriteString("ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\nJobAcctGatherType=jobacct_gather/none\n")
	b.WriteString("AccountingStorageType=accounting_storage/none\nMpiDefault=none\nSwitchType=switch/none\n")
	b.WriteString("SelectType=select/cons_tres\nSelectTypeParameters=CR_CPU\nReturnToService=2\n")
	b.WriteString("SlurmdParameters=config_overrides\nInactiveLimit=0\nKillWait=5\n")
	fmt.Fprintf(&b, "NodeName=%s NodeAddr=127.0.0.1 CPUs=%d State=UNKNOWN\n", c.node, max(2, runtime.NumCPU()))
	fmt.Fprintf(&b, "PartitionName=boltmesh Nodes=%s Default=YES MaxTime=10 State=UP\n", c.node)
	return b.String()
}

// start runs a daemon in the foreground, killed if the test process dies.
func (c *slurmCluster) start(t *testing.T, name string, args ...string) {
	t.Helper()
	d := &daemon{name: name, cmd: exec.Command(args[0], args[1:]...), out: filepath.Join(c.dir, name+".out"), done: make(chan error, 1)}
	out, err := os.Create(d.out)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	d.cmd.Env = c.env(nil)
	d.cmd.Stdout, d.cmd.Stderr = out, out
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := d.cmd.Start(); err != nil {
		t.Skipf("%s does not start: %v", name, err)
	}
	go func() { d.done <- d.cmd.Wait() }()
	c.daemons = append(c.daemons, d)
}

// env is the environment for Slurm's programs: this process's without
// any SLURM_* of an enclosing job, with $SLURM_CONF and extra.
func (c *slurmCluster) env(extra []string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SLURM_") {
			env = append(env, kv)
		}
	}
	if c.conf != "" {
		env = append(env, "SLURM_CONF="+c.conf)
	}
	return append(env, extra...)
}

// waitIdle waits until sinfo shows the node idle.
func (c *slurmCluster) waitIdle(t *testing.T) {
	t.Helper()
	var last string
	c.await(t, "sinfo to show "+c.node+" idle", func() bool {
		cmd := exec.Command("sinfo", "-h", "-N", "-n", c.node, "-o", "%T")
		cmd.Env = c.env(nil)
		out, _ := cmd.CombinedOutput()
		last = strings.TrimSpace(string(out))
		return last == "idle"
	})
	t.Logf("sinfo: %s %s", c.node, last)
}

// await polls ok until it holds, skipping the test with every daemon's
// output if it does not within slurmStartTimeout or a daemon exits.
func (c *slurmCluster) await(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(slurmStartTimeout)
	for !ok() {
		for _, d := range c.daemons {
			select {
			case err := <-d.done:
				d.done <- err
				c.skip(t, "%s exited (%v) while waiting for %s", d.name, err, what)
			default:
			}
		}
		if time.Now().After(deadline) {
			c.skip(t, "no %s in %v", what, slurmStartTimeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// skip skips the test with why and the tail of every daemon's output.
func (c *slurmCluster) skip(t *testing.T, format string, args ...any) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "cannot run Slurm here: "+format, args...)
	for _, d := range c.daemons {
		out, _ := os.ReadFile(d.out)
		fmt.Fprintf(&b, "\n--- %s:\n%s", d.name, tail(string(out), 20))
	}
	t.Skip(b.String())
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// srun runs "srun -N1 -n<tasks> args..." with env added to the
// environment the tasks inherit, bounded by cliCmd's watchdog.
func (c *slurmCluster) srun(t *testing.T, tasks int, env []string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("srun", append([]string{"-N1", fmt.Sprintf("-n%d", tasks), "--kill-on-bad-exit=1", "--time=2"}, args...)...)
	cmd.Env = c.env(env)
	stdout, stderr, err := cliCmd(t, cmd)
	return stdout + stderr, err
}

// stop ends the daemons, slurmd first: SIGTERM, then SIGKILL after 10 s.
func (c *slurmCluster) stop() {
	for i := len(c.daemons) - 1; i >= 0; i-- {
		d := c.daemons[i]
		d.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-d.done:
			d.done <- err
		case <-time.After(10 * time.Second):
			d.cmd.Process.Kill()
			<-d.done
		}
	}
}
