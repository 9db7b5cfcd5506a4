package main

import (
	"net"
	"strconv"
	"testing"
)

func TestFirstHost(t *testing.T) {
	for _, c := range []struct{ list, want string }{
		{"node1", "node1"},
		{"node1,node2", "node1"},
		{"node[07-09,12],gpu1", "node07"},
		{"node[3,1-2]", "node3"},
		{"rack[2-3]-n[010-020]", "rack2-n010"},
		{"gpu-[1-4].cluster", "gpu-1.cluster"},
		{"node[1-2", ""},
		{"", ""},
	} {
		if got := firstHost(c.list); got != c.want {
			t.Errorf("firstHost(%q) = %q, want %q", c.list, got, c.want)
		}
	}
}

// TestSlurmPort checks that the steps of a job get distinct ports in the
// Slurm range, each the same on every call.
func TestSlurmPort(t *testing.T) {
	seen := map[int]string{}
	for step := range 8 {
		s := strconv.Itoa(step)
		p := slurmPort("123456", s)
		if p < slurmPortBase || p >= slurmPortBase+slurmPortSpan {
			t.Errorf("step %d: port %d outside %d..%d", step, p, slurmPortBase, slurmPortBase+slurmPortSpan-1)
		}
		if q := slurmPort(" 123456", s+" "); q != p {
			t.Errorf("step %d: port %d, then %d", step, p, q)
		}
		if other, ok := seen[p]; ok {
			t.Errorf("steps %s and %d share port %d", other, step, p)
		}
		seen[p] = s
	}
}

// TestRendezvousListen checks that rank 0 listens on every interface
// only at the rendezvous it derived from the Slurm step.
func TestRendezvousListen(t *testing.T) {
	derived, _, _ := fromEnv(envOf("SLURM_PROCID", "0", "SLURM_NTASKS", "2", "SLURM_STEP_NODELIST", "n[1-2]", "SLURM_JOB_ID", "5", "SLURM_STEP_ID", "0"))
	_, port, _ := net.SplitHostPort(derived.rendezvous)
	master, _, _ := fromEnv(envOf("SLURM_PROCID", "0", "SLURM_NTASKS", "2", "MASTER_ADDR", "n1", "MASTER_PORT", "6000"))
	for _, c := range []struct {
		name, flag string
		m          membership
		want       string
	}{
		{"derived", "", derived, ":" + port},
		{"flag beats derived", "n1:7000", derived, "n1:7000"},
		{"master", "", master, "n1:6000"},
	} {
		rv := rendezvousAddr(c.flag, c.m, envOf())
		if got := rendezvousListen(rv, c.m); got != c.want {
			t.Errorf("%s: rank 0 listens at %q for %q, want %q", c.name, got, rv, c.want)
		}
	}
}
