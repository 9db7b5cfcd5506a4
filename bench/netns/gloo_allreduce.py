#!/usr/bin/python3
"""PyTorch Gloo's allreduce (torch.distributed, CPU, TCP over loopback), timed as
mpi_allreduce.c times OpenMPI's: per size a warm-up, then per call a barrier, the call,
and the slowest rank's time; iterations scale with the size. RANKS ranks (default 2) as
processes; the sizes in bytes are the arguments (float32 elements). Prints, from rank 0,
one line per size: 'bytes p50_us algbw busbw p99_us' (GB/s, busbw = algbw * 2(n-1)/n),
the format boltmesh cores and scalereport read."""
import os, sys, time, statistics, socket
import torch, torch.distributed as dist
import torch.multiprocessing as mp

def iterations(nbytes):
    return max(20, min(2000, int(2e8 // max(nbytes, 1))))

def run(rank, world, port, sizes, q):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    out = []
    for nbytes in sizes:
        x = torch.ones(max(1, nbytes // 4), dtype=torch.float32)
        iters = iterations(nbytes)
        for _ in range(max(5, iters // 10)):
            dist.all_reduce(x)
        ts = []
        t = torch.zeros(1, dtype=torch.float64)
        for _ in range(iters):
            dist.barrier()
            t0 = time.perf_counter()
            dist.all_reduce(x)
            t[0] = time.perf_counter() - t0
            dist.all_reduce(t, op=dist.ReduceOp.MAX)
            ts.append(t.item())
        if rank == 0:
            ts.sort()
            p50 = statistics.median(ts)
            p99 = ts[min(len(ts) - 1, int(0.99 * len(ts)))]
            alg = nbytes / p50 / 1e9
            out.append(f"{nbytes} {p50*1e6:.2f} {alg:.3f} {alg*2*(world-1)/world:.3f} {p99*1e6:.2f}")
    if rank == 0:
        q.put(out)
    dist.destroy_process_group()

if __name__ == "__main__":
    world = int(os.environ.get("RANKS", "2"))
    sizes = [int(s) for s in (sys.argv[1:] or ["8", "65536", "1048576", "16777216"])]
    s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    ps = [ctx.Process(target=run, args=(r, world, port, sizes, q)) for r in range(world)]
    for p in ps:
        p.start()
    for line in q.get():
        print(line, flush=True)
    for p in ps:
        p.join()
    sys.exit(max(p.exitcode or 0 for p in ps))
