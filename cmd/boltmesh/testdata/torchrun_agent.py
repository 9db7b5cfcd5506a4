"""A stand-in for torchrun's agent (torch 1.13, static rendezvous).

Debian's torchrun 1.13 entry point crashes on Python 3.11 before it
starts any worker (an AttributeError in
torch.distributed.elastic.multiprocessing.api.to_map), so this script
does what its agent does for one node and one attempt: it serves a
torch.distributed.TCPStore on MASTER_ADDR:MASTER_PORT (is_master=True,
wait_for_workers=False, multi_tenant=True, as its static rendezvous
does), starts --nproc-per-node workers with the environment
LocalElasticAgent gives them (RANK, LOCAL_RANK, GROUP_RANK, ROLE_RANK,
ROLE_NAME, LOCAL_WORLD_SIZE, WORLD_SIZE, GROUP_WORLD_SIZE,
ROLE_WORLD_SIZE, MASTER_ADDR, MASTER_PORT, TORCHELASTIC_RESTART_COUNT,
TORCHELASTIC_MAX_RESTARTS, TORCHELASTIC_RUN_ID,
TORCHELASTIC_USE_AGENT_STORE=True), writes each worker's output to
LOG_DIR/attempt_0/<rank>/stdout.log and stderr.log (torchrun's layout),
and exits with the first failing worker's status, or 0. The store stays
up until every worker has exited.

Usage: torchrun_agent.py --nproc-per-node N --run-id ID --log-dir DIR
                         [--timeout SECONDS] -- COMMAND [ARGS...]
"""
import argparse
import datetime
import os
import socket
import subprocess
import sys
import time

from torch.distributed import TCPStore


def free_port():
    # torchrun's _get_socket_with_port, then the port is handed to the store.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--nproc-per-node", type=int, default=2)
    p.add_argument("--run-id", default="none")
    p.add_argument("--log-dir", required=True)
    p.add_argument("--timeout", type=float, default=120)
    p.add_argument("command", nargs=argparse.REMAINDER)
    a = p.parse_args()
    cmd = a.command[1:] if a.command[:1] == ["--"] else a.command
    if not cmd:
        p.error("no command")

    addr, port = "127.0.0.1", free_port()
    store = TCPStore(addr, port, 1, True, datetime.timedelta(seconds=a.timeout),
                     wait_for_workers=False, multi_tenant=True)
    print(f"agent store at {addr}:{store.port}", flush=True)

    n = a.nproc_per_node
    procs = []
    for rank in range(n):
        env = dict(os.environ)
        env.update({
            "LOCAL_RANK": str(rank),
            "RANK": str(rank),
            "GROUP_RANK": "0",
            "ROLE_RANK": str(rank),
            "ROLE_NAME": "default",
            "LOCAL_WORLD_SIZE": str(n),
            "WORLD_SIZE": str(n),
            "GROUP_WORLD_SIZE": "1",
            "ROLE_WORLD_SIZE": str(n),
            "MASTER_ADDR": addr,
            "MASTER_PORT": str(store.port),
            "TORCHELASTIC_RESTART_COUNT": "0",
            "TORCHELASTIC_MAX_RESTARTS": "0",
            "TORCHELASTIC_RUN_ID": a.run_id,
            "TORCHELASTIC_USE_AGENT_STORE": "True",
        })
        d = os.path.join(a.log_dir, "attempt_0", str(rank))
        os.makedirs(d, exist_ok=True)
        out = open(os.path.join(d, "stdout.log"), "wb")
        err = open(os.path.join(d, "stderr.log"), "wb")
        procs.append((rank, subprocess.Popen(cmd, env=env, stdout=out, stderr=err)))

    deadline = time.monotonic() + a.timeout
    status = 0
    pending = list(procs)
    while pending and time.monotonic() < deadline:
        for rank, proc in list(pending):
            code = proc.poll()
            if code is None:
                continue
            pending.remove((rank, proc))
            print(f"rank {rank} exit {code}", flush=True)
            if code != 0 and status == 0:
                status = code if code > 0 else 1
        time.sleep(0.05)
    for rank, proc in pending:
        proc.kill()
        proc.wait()
        print(f"rank {rank} killed after {a.timeout:g}s", flush=True)
        status = status or 1
    del store
    return status


if __name__ == "__main__":
    sys.exit(main())
