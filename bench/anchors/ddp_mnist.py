#!/usr/bin/env python3
"""The anchor of `boltmesh train`: the same loop in PyTorch DDP over Gloo.

The same model (784-256-10, ReLU, softmax cross-entropy, float32), plain SGD
at a fixed learning rate, global batch, and data scheme as boltmesh's train
package: every rank walks the same seeded shuffle of the training set (one
per epoch) and takes its contiguous shard of each global batch; the last
partial batch is dropped. The permutation and the initial weights come from
torch's generator, not Go's PCG, so the curves match in shape, not in bits.

The gradient travels in one DDP bucket, and a comm hook waits for its
allreduce before backward goes on (no overlap, as in boltmesh train), so
that the step splits into compute (forward, backward, update) and
communication (the hook's allreduce) as boltmesh reports it. The hook
averages (allreduce SUM, then divide by the world size), as DDP does.

Usage: ddp_mnist.py --data DIR [--ranks 2] [--epochs 1] [--batch 64]
       [--lr 0.1] [--seed 1] [--samples 0] [--test-samples 0] [--json FILE]
Rank 0 prints one line per epoch in boltmesh train's format.
"""
import argparse
import gzip
import json
import os
import socket
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F


def load(data, prefix, n):
    with gzip.open(os.path.join(data, prefix + "-images-idx3-ubyte.gz")) as f:
        x = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 784)
    with gzip.open(os.path.join(data, prefix + "-labels-idx1-ubyte.gz")) as f:
        y = np.frombuffer(f.read(), np.uint8, offset=8)
    if n > 0:
        x, y = x[:n], y[:n]
    return torch.from_numpy(x.astype(np.float32) / 255), torch.from_numpy(y.astype(np.int64))


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(784, 256)
        self.l2 = nn.Linear(256, 10)
        for l, fan_in in ((self.l1, 784), (self.l2, 256)):  # He uniform, zero bias, as train.NewModel
            a = (6 / fan_in) ** 0.5
            nn.init.uniform_(l.weight, -a, a)
            nn.init.zeros_(l.bias)

    def forward(self, x):
        return self.l2(F.relu(self.l1(x)))


def timed_allreduce(state, bucket):
    """A DDP comm hook: allreduce the bucket and wait, timing it."""
    t0 = time.perf_counter()
    buf = bucket.buffer()
    dist.all_reduce(buf)
    buf.div_(state["world"])
    state["comm"] += time.perf_counter() - t0
    fut = torch.futures.Future()
    fut.set_result(buf)
    return fut


def worker(rank, args, port):
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(port)
    torch.set_num_threads(max(1, (os.cpu_count() or 1) // args.ranks))
    dist.init_process_group("gloo", rank=rank, world_size=args.ranks)
    xtr, ytr = load(args.data, "train", args.samples)
    xte, yte = load(args.data, "t10k", args.test_samples)
    torch.manual_seed(args.seed)
    model = nn.parallel.DistributedDataParallel(MLP(), bucket_cap_mb=4)
    state = {"comm": 0.0, "world": args.ranks}
    model.register_comm_hook(state, timed_allreduce)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr)
    shard = args.batch // args.ranks
    steps = len(ytr) // args.batch
    records, start = [], time.perf_counter()
    for epoch in range(1, args.epochs + 1):
        g = torch.Generator().manual_seed(args.seed * 1000 + epoch)
        perm = torch.randperm(len(ytr), generator=g)
        state["comm"], loss_sum, t_epoch = 0.0, 0.0, time.perf_counter()
        for s in range(steps):
            idx = perm[s * args.batch + rank * shard: s * args.batch + (rank + 1) * shard]
            opt.zero_grad(set_to_none=False)
            loss = F.cross_entropy(model(xtr[idx]), ytr[idx])
            loss.backward()
            opt.step()
            loss_sum += loss.item()
        wall = time.perf_counter() - t_epoch
        with torch.no_grad():
            acc = (model(xte).argmax(1) == yte).float().mean().item()
        rec = {"epoch": epoch, "loss": loss_sum / steps, "test_accuracy": acc,
               "compute_s": wall - state["comm"], "comm_s": state["comm"],
               "elapsed_s": time.perf_counter() - start, "steps": steps}
        records.append(rec)
        if rank == 0:
            per = lambda v: "%.3fms" % (1e3 * v / steps)
            print("epoch %d  loss %.4f  test accuracy %.2f%%  step %s (compute %s, comm %s)  at %.1fs" % (
                epoch, rec["loss"], 100 * acc, per(wall), per(rec["compute_s"]), per(rec["comm_s"]),
                rec["elapsed_s"]), flush=True)
    if rank == 0 and args.json:
        with open(args.json, "w") as f:
            json.dump({"schema": "boltmesh-train/v1", "impl": "torch-ddp-gloo", "world": args.ranks,
                       "batch": args.batch, "lr": args.lr, "seed": args.seed, "samples": len(ytr),
                       "epochs": records}, f, indent=2)
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", required=True, help="directory of the MNIST .gz files")
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--batch", type=int, default=64, help="global batch")
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--samples", type=int, default=0, help="first N training samples (0: all)")
    p.add_argument("--test-samples", type=int, default=0, help="first N test samples (0: all)")
    p.add_argument("--json", default="", help="write the per-epoch records to FILE")
    args = p.parse_args()
    if args.batch % args.ranks:
        sys.exit("--batch must be a multiple of --ranks")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.spawn(worker, args=(args, port), nprocs=args.ranks)


if __name__ == "__main__":
    main()
