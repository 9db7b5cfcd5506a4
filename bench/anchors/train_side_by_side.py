#!/usr/bin/env python3
"""Prints two boltmesh-train/v1 JSON files (boltmesh train, ddp_mnist.py) side by side.

Usage: train_side_by_side.py BOLTMESH.json DDP.json
Per epoch: loss, test accuracy, and the mean step time split into compute
and communication; then the ratios of the last epoch (boltmesh / DDP).
"""
import json
import sys


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    runs = []
    for name, path in zip(("boltmesh", "ddp-gloo"), sys.argv[1:]):
        with open(path) as f:
            runs.append((name, json.load(f)))
    print("%-9s %5s %8s %9s %11s %11s %11s" % ("impl", "epoch", "loss", "test acc", "step ms", "compute ms", "comm ms"))
    last = {}
    for name, rep in runs:
        for ep in rep["epochs"]:
            n = ep["steps"]
            c, m = 1e3 * ep["compute_s"] / n, 1e3 * ep["comm_s"] / n
            print("%-9s %5d %8.4f %8.2f%% %11.3f %11.3f %11.3f" % (name, ep["epoch"], ep["loss"], 100 * ep["test_accuracy"], c + m, c, m))
            last[name] = (c + m, c, m)
    b, d = last["boltmesh"], last["ddp-gloo"]
    print("last epoch, boltmesh/ddp: step %.2fx, compute %.2fx, comm %.2fx" % tuple(x / y if y else float("nan") for x, y in zip(b, d)))


if __name__ == "__main__":
    main()
