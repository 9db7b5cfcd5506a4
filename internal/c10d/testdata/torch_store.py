"""Serves a real torch.distributed.TCPStore for internal/c10d's tests.

Starts the store on a free loopback port (is_master=True,
wait_for_workers=False, as torchrun's agent does), sets py/key, prints
"port N", then waits for the Go client's go/key, prints "go/key VALUE",
sets py/done and exits. Keys go through torch's client, which puts "/"
before them.
"""
import datetime
import sys

from torch.distributed import TCPStore

store = TCPStore("127.0.0.1", 0, 1, True, datetime.timedelta(seconds=60),
                 wait_for_workers=False)
store.set("py/key", "from python")
print("port", store.port, flush=True)
value = store.get("go/key")
print("go/key", value.decode(), flush=True)
print("go/count", store.get("go/count").decode(), flush=True)
store.set("py/done", "1")
# Stay up until the Go side has read py/done and says so.
store.wait(["go/bye"])
