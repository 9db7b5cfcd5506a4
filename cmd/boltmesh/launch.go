package main

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// defaultRendezvous is rank 0's rendezvous address when nothing names one:
// right for mpirun on one machine.
const defaultRendezvous = "127.0.0.1:29517"

// membership is where this process stands in the mesh: its rank, the
// world size, and either the peers' addresses or rank 0's rendezvous.
type membership struct {
	rank, world int
	peers       []string // every rank's address, if known up front
	rendezvous  string   // rank 0's rendezvous address, from the launcher
	derived     bool     // rendezvous derived from the Slurm step, not named (slurmRendezvous)
	source      string   // "flags", "openmpi", "slurm", "pmi", "torchrun"
}

// launcher reads one launcher's environment; ok is false when the
// launcher's variables are absent.
type launcher struct {
	name string
	read func(getenv func(string) string) (m membership, ok bool, err error)
}

// launchers are tried in order: OpenMPI inside a Slurm allocation still
// sets SLURM_* for the whole step, so OpenMPI goes first.
var launchers = []launcher{
	{"openmpi", rankSizeEnv("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE")},
	{"slurm", slurmEnv},
	{"pmi", rankSizeEnv("PMI_RANK", "PMI_SIZE")},
	{"torchrun", torchrunEnv},
}

// fromEnv finds this process's membership in a launcher's environment.
// ok is false when no launcher is recognized.
func fromEnv(getenv func(string) string) (membership, bool, error) {
	for _, l := range launchers {
		m, ok, err := l.read(getenv)
		if err != nil {
			return m, false, fmt.Errorf("%s environment: %w", l.name, err)
		}
		if ok {
			m.source = l.name
			if m.rendezvous == "" {
				m.rendezvous = masterAddr(getenv)
			}
			return m, true, nil
		}
	}
	return membership{}, false, nil
}

// rankSizeEnv reads a rank and a world size from two variables.
func rankSizeEnv(rankVar, sizeVar string) func(func(string) string) (membership, bool, error) {
	return func(getenv func(string) string) (membership, bool, error) {
		r, s := getenv(rankVar), getenv(sizeVar)
		if r == "" && s == "" {
			return membership{}, false, nil
		}
		m, err := rankWorld(rankVar, r, sizeVar, s)
		return m, err == nil, err
	}
}

// slurmEnv reads srun's SLURM_PROCID and SLURM_NTASKS (or SLURM_NPROCS),
// and takes the rendezvous from MASTER_ADDR:MASTER_PORT, else derives it
// from the step (slurmRendezvous).
func slurmEnv(getenv func(string) string) (membership, bool, error) {
	r := getenv("SLURM_PROCID")
	sizeVar := "SLURM_NTASKS"
	if getenv(sizeVar) == "" {
		sizeVar = "SLURM_NPROCS"
	}
	s := getenv(sizeVar)
	if r == "" || s == "" { // SLURM_PROCID alone is set in batch scripts too
		return membership{}, false, nil
	}
	m, err := rankWorld("SLURM_PROCID", r, sizeVar, s)
	if err != nil {
		return m, false, err
	}
	if m.rendezvous = masterAddr(getenv); m.rendezvous == "" {
		m.rendezvous = slurmRendezvous(getenv)
		m.derived = m.rendezvous != ""
	}
	return m, true, nil
}

// torchrunEnv reads RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT.
func torchrunEnv(getenv func(string) string) (membership, bool, error) {
	r, s := getenv("RANK"), getenv("WORLD_SIZE")
	if r == "" || s == "" {
		return membership{}, false, nil
	}
	m, err := rankWorld("RANK", r, "WORLD_SIZE", s)
	if err != nil {
		return m, false, err
	}
	if m.world > 1 && masterAddr(getenv) == "" {
		return m, false, fmt.Errorf("RANK and WORLD_SIZE are set but MASTER_ADDR or MASTER_PORT is not")
	}
	return m, true, nil
}

// masterAddr returns MASTER_ADDR:MASTER_PORT, or "" unless both are set.
func masterAddr(getenv func(string) string) string {
	a, p := getenv("MASTER_ADDR"), getenv("MASTER_PORT")
	if a == "" || p == "" {
		return ""
	}
	return net.JoinHostPort(a, p)
}

// rankWorld parses and checks a rank and a world size.
func rankWorld(rankVar, r, sizeVar, s string) (membership, error) {
	rank, err1 := strconv.Atoi(strings.TrimSpace(r))
	world, err2 := strconv.Atoi(strings.TrimSpace(s))
	switch {
	case err1 != nil:
		return membership{}, fmt.Errorf("%s=%q is not a number", rankVar, r)
	case err2 != nil:
		return membership{}, fmt.Errorf("%s=%q is not a number", sizeVar, s)
	case world < 1:
		return membership{}, fmt.Errorf("%s=%d: need at least 1 rank", sizeVar, world)
	case rank < 0 || rank >= world:
		return membership{}, fmt.Errorf("%s=%d is outside 0..%d", rankVar, rank, world-1)
	}
	return membership{rank: rank, world: world}, nil
}

// fromFlags returns the membership the flags give, ok false when --rank
// and --world are both absent.
func fromFlags(f *meshFlags) (membership, bool, error) {
	if f.rank < 0 && f.world < 0 {
		if f.peers != "" {
			return membership{}, false, usageErr("--peers needs --rank and --world")
		}
		return membership{}, false, nil
	}
	if f.rank < 0 || f.world < 1 || f.rank >= f.world {
		return membership{}, false, usageErr("--rank %d --world %d: need 0 <= rank < world", f.rank, f.world)
	}
	m := membership{rank: f.rank, world: f.world, source: "flags"}
	if f.peers != "" {
		m.peers = splitList(f.peers)
		if len(m.peers) != f.world {
			return membership{}, false, flagErr("peers", f.peers, "%d addresses for --world %d", len(m.peers), f.world)
		}
		if err := checkPeers(f.peers, m.peers); err != nil {
			return membership{}, false, err
		}
	}
	return m, true, nil
}

// splitList splits a comma-separated list, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

// rendezvousAddr picks rank 0's rendezvous address: the flag, then
// $BOLTMESH_RENDEZVOUS, then the launcher's (MASTER_ADDR:MASTER_PORT, or
// under srun the step's first node, slurmRendezvous), then
// defaultRendezvous.
func rendezvousAddr(flagValue string, m membership, getenv func(string) string) string {
	for _, a := range []string{flagValue, getenv("BOLTMESH_RENDEZVOUS"), m.rendezvous} {
		if a != "" {
			return a
		}
	}
	return defaultRendezvous
}
