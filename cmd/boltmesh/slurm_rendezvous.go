package main

import (
	"hash/fnv"
	"net"
	"strconv"
	"strings"
)

// Under srun without MASTER_ADDR/MASTER_PORT, every task of a step
// derives the same rendezvous from the step's variables: rank 0 runs on
// the step's first node (srun's block and cyclic distributions put task
// 0 there), and the port comes from the job and step ids, so that
// several steps, of one job or of several sharing a node, do not meet at
// one fixed port. Rank 0 listens at that port on every interface, since
// its node's name may resolve, on that node, to a loopback address
// (Debian maps its hostname to 127.0.1.1) that other nodes cannot reach.

// Slurm-derived rendezvous ports lie in slurmPortBase..+slurmPortSpan-1,
// below Linux's ephemeral ports (32768 and up), so that no rank's own
// listener can hold one.
const (
	slurmPortBase = 20000
	slurmPortSpan = 10000
)

// slurmRendezvous is the step's rendezvous, "" unless the step's node
// list and job id are set: the first node of SLURM_STEP_NODELIST (else
// SLURM_JOB_NODELIST, SLURM_NODELIST) at slurmPort.
func slurmRendezvous(getenv func(string) string) string {
	nodes := firstOf(getenv, "SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST")
	job := firstOf(getenv, "SLURM_JOB_ID", "SLURM_JOBID")
	host := firstHost(nodes)
	if host == "" || job == "" {
		return ""
	}
	step := firstOf(getenv, "SLURM_STEP_ID", "SLURM_STEPID")
	return net.JoinHostPort(host, strconv.Itoa(slurmPort(job, step)))
}

// slurmPort maps a job id and a step id to a port in the Slurm range,
// the same in every task of the step.
func slurmPort(job, step string) int {
	h := fnv.New32a()
	h.Write([]byte(strings.TrimSpace(job) + "." + strings.TrimSpace(step)))
	return slurmPortBase + int(h.Sum32()%slurmPortSpan)
}

// firstOf is the first non-empty value of the variables vars.
func firstOf(getenv func(string) string, vars ...string) string {
	for _, v := range vars {
		if s := strings.TrimSpace(getenv(v)); s != "" {
			return s
		}
	}
	return ""
}

// firstHost is the first host of a Slurm host list such as
// "node[07-09,12],gpu1" (node07): at each bracket the range's first
// number is kept, as written (with its leading zeros).
func firstHost(list string) string {
	var b strings.Builder
	for i := 0; i < len(list); i++ {
		switch c := list[i]; c {
		case ',':
			return b.String()
		case '[':
			end := strings.IndexByte(list[i:], ']')
			if end < 0 {
				return ""
			}
			first, _, _ := strings.Cut(list[i+1:i+end], ",")
			first, _, _ = strings.Cut(first, "-")
			b.WriteString(first)
			i += end
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// rendezvousListen is where rank 0 listens for the rendezvous rv: at
// rv's port on every interface when rv is the one derived from the Slurm
// step, else at rv.
func rendezvousListen(rv string, m membership) string {
	if !m.derived || rv != m.rendezvous {
		return rv
	}
	_, port, err := net.SplitHostPort(rv)
	if err != nil {
		return rv
	}
	return net.JoinHostPort("", port)
}
