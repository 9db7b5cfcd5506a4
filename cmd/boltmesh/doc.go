// Command boltmesh benchmarks and profiles boltmesh.
//
//	boltmesh bench [flags]          run the benchmark suites (rank 0, or every rank under a launcher)
//	boltmesh rank [flags]           join a mesh as a participant and follow rank 0
//	boltmesh train [flags]          data-parallel training of an MLP on MNIST
//	boltmesh soak [flags]           many ranks in an allreduce and barrier loop, with their resources
//	boltmesh profile [flags] FILE   summarize a CPU profile
//	boltmesh keygen FILE            write a new mesh key to FILE
//
// Run "boltmesh COMMAND --help" for each command's flags.
//
// # Launching
//
// bench, rank, train and soak take the same launch flags. With none,
// bench and train start 2 ranks and soak 32 (--ranks N) as local
// processes on loopback. Across machines every rank gets --rank and --world, and either --peers (every
// rank's host:port, in rank order), --rendezvous (rank 0's rendezvous
// address) or --coordinator (a star: rank 0 listens there, the others
// dial it). Under a launcher the rank and world come from its
// environment: mpirun (OMPI_COMM_WORLD_RANK/SIZE), srun
// (SLURM_PROCID/NTASKS), PMI_RANK/PMI_SIZE, or torchrun's
// RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT.
//
// Under a launcher the ranks meet at rank 0's rendezvous address
// (--rendezvous, $BOLTMESH_RENDEZVOUS, MASTER_ADDR:MASTER_PORT, under srun
// the step's first node, or 127.0.0.1:29517), which hands everyone the
// peer list; no peer list is needed. Rank 0 serves the rendezvous's
// connections concurrently, each with a 5 s handshake deadline and
// bounded reads, so strangers that connect and say nothing, or send
// garbage, delay no one.
//
// # Under srun
//
// Every task derives the same rendezvous address from the step: the first
// host of SLURM_STEP_NODELIST (where srun's block and cyclic distributions
// put task 0) at a port in 20000-29999 hashed from SLURM_JOB_ID and
// SLURM_STEP_ID, so concurrent steps do not collide; rank 0 listens at
// that port on every interface. With --distribution=arbitrary or a node
// name that other nodes cannot resolve, name the rendezvous yourself.
//
// # Under torchrun
//
// MASTER_PORT may already be taken: torchrun's agent (with the static
// rendezvous, torch 1.13's default) serves a c10d TCPStore there and says
// so with TORCHELASTIC_USE_AGENT_STORE=True. Then, and whenever rank 0
// finds MASTER_PORT taken by something that answers as a TCPStore, no rank
// listens on MASTER_PORT: each listens on a port of its own, writes its
// address into the store under
// /boltmesh/$TORCHELASTIC_RUN_ID/attempt_$TORCHELASTIC_RESTART_COUNT/rank/N,
// waits there for every other rank's, forms the mesh, and deletes its
// entry. The store holds addresses only; with a key, the mesh's handshake
// proves it on every connection, so whoever can read or write the store
// can at worst make the ranks fail, not join them or learn the key. The
// client (internal/c10d) speaks the store protocol of torch 1.x-2.0, which
// the tests check against python3-torch 1.13's store, and the
// VALIDATE-first protocol of later 2.x releases, which it detects.
// --rendezvous or $BOLTMESH_RENDEZVOUS overrides all this and names the
// JSON rendezvous, as elsewhere.
//
// # Keys
//
// With a key (--key-file, or $BOLTMESH_KEY; boltmesh keygen writes one),
// every connection proves it: the mesh's (an HMAC over a nonce in the
// HELLO), the rendezvous's (rank 0 sends a fresh nonce that each rank's
// hello MAC covers, and its peer list's MAC covers the rank's own nonce,
// so neither can be replayed from a recorded rendezvous) and the stdnet
// baseline's (its mesh and net/rpc connections answer a nonce with a MAC
// too). A connection that fails is refused without disturbing the run.
// --key-file refuses a file that anyone but its owner may read or write
// ("--key-file k: mode 0644 is readable by others; chmod 600 k").
//
// A local run (bench, soak or train starting its own ranks, --ranks N)
// needs no key given: without --key-file or $BOLTMESH_KEY, rank 0 makes a
// new one for the run (as boltmesh keygen does) and hands it to the ranks
// it starts in their environment (BOLTMESH_KEY), never on their command
// line, which any user of the machine can read; so its mesh, star and
// rendezvous refuse any other process. A --key-file given goes to them as
// the flag.
//
// Ranks placed by a launcher or by the flags (--rank/--world) have no
// such rank 0: without a key, anyone who reaches the ports can join, any
// process of the same machine included, so each such rank prints a
// warning, once, on loopback too (beyond loopback the engine warns as
// well). Give them a key: boltmesh
// keygen FILE, then --key-file FILE on every rank, or BOLTMESH_KEY="$(cat
// FILE)" exported to every rank (mpirun -x BOLTMESH_KEY). A rendezvous
// hello without a key proof is refused by a rank 0 that has a key, and one
// with a proof by a rank 0 that has none, each saying which. --pprof ADDR
// serves profiles to anyone who reaches ADDR, so bind it to loopback.
//
// # Checks before a run
//
// Every flag is checked before anything starts: a bad value exits with
// status 2 and one line naming the flag ("--timeout 0s: must be
// positive"), in the parent, not in the ranks it would start. bench also
// refuses what this machine cannot hold: a local run of more than 8 ranks
// per core, or ranks whose heaps and buffers (each rank's --heap plus 4
// times the largest size) would take more than half of its memory (RAM,
// or the cgroup's limit if lower); --force runs it anyway. The exit status
// is 1 if any rank's data check failed.
//
// # Congestion control
//
// --congestion sets engine.Options.Congestion: by default boltmesh's
// loopback connections use cubic and the others keep the kernel's
// default, and --congestion system keeps the kernel's everywhere. bench
// prints which one each side of its comparison used: the stdnet baseline
// keeps the kernel's.
package main
