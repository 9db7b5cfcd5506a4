package main

import (
	"slices"
	"strconv"
	"testing"
)

func envOf(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

// launcherCase is one environment and what fromEnv must make of it.
type launcherCase struct {
	name    string
	env     []string
	ok      bool
	wantErr bool
	want    membership
}

func runLauncherCases(t *testing.T, cases []launcherCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, ok, err := fromEnv(envOf(c.env...))
			if (err != nil) != c.wantErr || ok != c.ok {
				t.Fatalf("fromEnv: ok %v, err %v; want ok %v, error %v", ok, err, c.ok, c.wantErr)
			}
			if ok && (m.rank != c.want.rank || m.world != c.want.world || m.source != c.want.source || m.rendezvous != c.want.rendezvous) {
				t.Fatalf("got %+v, want %+v", m, c.want)
			}
		})
	}
}

func TestLauncherOpenMPI(t *testing.T) {
	runLauncherCases(t, []launcherCase{
		{"rank1of4", []string{"OMPI_COMM_WORLD_RANK", "1", "OMPI_COMM_WORLD_SIZE", "4"}, true, false, membership{rank: 1, world: 4, source: "openmpi"}},
		{"with master", []string{"OMPI_COMM_WORLD_RANK", "0", "OMPI_COMM_WORLD_SIZE", "2", "MASTER_ADDR", "10.0.0.1", "MASTER_PORT", "5000"}, true, false, membership{rank: 0, world: 2, source: "openmpi", rendezvous: "10.0.0.1:5000"}},
		{"beats slurm", []string{"OMPI_COMM_WORLD_RANK", "3", "OMPI_COMM_WORLD_SIZE", "4", "SLURM_PROCID", "0", "SLURM_NTASKS", "1"}, true, false, membership{rank: 3, world: 4, source: "openmpi"}},
		{"rank out of range", []string{"OMPI_COMM_WORLD_RANK", "4", "OMPI_COMM_WORLD_SIZE", "4"}, false, true, membership{}},
		{"size missing", []string{"OMPI_COMM_WORLD_RANK", "0"}, false, true, membership{}},
		{"not a number", []string{"OMPI_COMM_WORLD_RANK", "x", "OMPI_COMM_WORLD_SIZE", "2"}, false, true, membership{}},
		{"absent", nil, false, false, membership{}},
	})
}

func TestLauncherSlurm(t *testing.T) {
	runLauncherCases(t, []launcherCase{
		{"srun", []string{"SLURM_PROCID", "2", "SLURM_NTASKS", "3"}, true, false, membership{rank: 2, world: 3, source: "slurm"}},
		{"nprocs", []string{"SLURM_PROCID", "0", "SLURM_NPROCS", "2"}, true, false, membership{rank: 0, world: 2, source: "slurm"}},
		{"batch script", []string{"SLURM_PROCID", "0"}, false, false, membership{}},
		{"zero tasks", []string{"SLURM_PROCID", "0", "SLURM_NTASKS", "0"}, false, true, membership{}},
		{"master", []string{"SLURM_PROCID", "1", "SLURM_NTASKS", "2", "MASTER_ADDR", "node1", "MASTER_PORT", "29500"}, true, false, membership{rank: 1, world: 2, source: "slurm", rendezvous: "node1:29500"}},
		{"step", []string{"SLURM_PROCID", "3", "SLURM_NTASKS", "4", "SLURM_STEP_NODELIST", "node[07-09,12],gpu1", "SLURM_JOB_ID", "4242", "SLURM_STEP_ID", "1"},
			true, false, membership{rank: 3, world: 4, source: "slurm", rendezvous: "node07:" + strconv.Itoa(slurmPort("4242", "1"))}},
		{"job nodelist", []string{"SLURM_PROCID", "0", "SLURM_NTASKS", "2", "SLURM_JOB_NODELIST", "c1", "SLURM_JOBID", "7"},
			true, false, membership{rank: 0, world: 2, source: "slurm", rendezvous: "c1:" + strconv.Itoa(slurmPort("7", ""))}},
		{"master beats step", []string{"SLURM_PROCID", "1", "SLURM_NTASKS", "2", "SLURM_STEP_NODELIST", "node1", "SLURM_JOB_ID", "9", "MASTER_ADDR", "head", "MASTER_PORT", "29500"},
			true, false, membership{rank: 1, world: 2, source: "slurm", rendezvous: "head:29500"}},
		{"no job id", []string{"SLURM_PROCID", "1", "SLURM_NTASKS", "2", "SLURM_STEP_NODELIST", "node1"}, true, false, membership{rank: 1, world: 2, source: "slurm"}},
	})
}

func TestLauncherTorchrun(t *testing.T) {
	runLauncherCases(t, []launcherCase{
		{"torchrun", []string{"RANK", "1", "WORLD_SIZE", "2", "MASTER_ADDR", "127.0.0.1", "MASTER_PORT", "29400"}, true, false, membership{rank: 1, world: 2, source: "torchrun", rendezvous: "127.0.0.1:29400"}},
		{"ipv6 master", []string{"RANK", "0", "WORLD_SIZE", "2", "MASTER_ADDR", "fe80::1", "MASTER_PORT", "1"}, true, false, membership{rank: 0, world: 2, source: "torchrun", rendezvous: "[fe80::1]:1"}},
		{"no master", []string{"RANK", "0", "WORLD_SIZE", "2"}, false, true, membership{}},
		{"single", []string{"RANK", "0", "WORLD_SIZE", "1"}, true, false, membership{rank: 0, world: 1, source: "torchrun"}},
		{"rank only", []string{"RANK", "3"}, false, false, membership{}},
	})
}

func TestLauncherPMI(t *testing.T) {
	runLauncherCases(t, []launcherCase{
		{"hydra", []string{"PMI_RANK", "1", "PMI_SIZE", "2"}, true, false, membership{rank: 1, world: 2, source: "pmi"}},
	})
}

func TestFromFlags(t *testing.T) {
	for _, c := range []struct {
		f       meshFlags
		ok, err bool
		peers   []string
	}{
		{meshFlags{rank: -1, world: -1}, false, false, nil},
		{meshFlags{rank: 1, world: 2, peers: "a:1, b:2"}, true, false, []string{"a:1", "b:2"}},
		{meshFlags{rank: 1, world: 2}, true, false, nil},
		{meshFlags{rank: 2, world: 2}, false, true, nil},
		{meshFlags{rank: 0, world: 3, peers: "a:1,b:2"}, false, true, nil},
		{meshFlags{rank: -1, world: -1, peers: "a:1"}, false, true, nil},
	} {
		m, ok, err := fromFlags(&c.f)
		if ok != c.ok || (err != nil) != c.err || !slices.Equal(m.peers, c.peers) {
			t.Errorf("%+v: got %+v, %v, %v", c.f, m, ok, err)
		}
	}
}

func TestRendezvousAddr(t *testing.T) {
	m := membership{rendezvous: "master:1"}
	for _, c := range []struct {
		flag string
		env  []string
		m    membership
		want string
	}{
		{"f:1", []string{"BOLTMESH_RENDEZVOUS", "e:1"}, m, "f:1"},
		{"", []string{"BOLTMESH_RENDEZVOUS", "e:1"}, m, "e:1"},
		{"", nil, m, "master:1"},
		{"", nil, membership{}, defaultRendezvous},
	} {
		if got := rendezvousAddr(c.flag, c.m, envOf(c.env...)); got != c.want {
			t.Errorf("rendezvousAddr(%q, %v, %v) = %q, want %q", c.flag, c.m, c.env, got, c.want)
		}
	}
}
