"""Run one function on N CPU processes that form a real torch.distributed group (gloo, 127.0.0.1).

    from helpers.distributed import run
    results = run(ddp_steps.sequential, world_size=2, heads=2)   # [rank 0's return value, rank 1's]

- `fn(rank, world_size, **kwargs)` runs in each process, after `init_process_group("gloo")`.
  It must be importable (defined in a module such as helpers.ddp_steps, not in a notebook):
  the processes are started fresh (forkserver or spawn), and find the function by importing it.
- The port is the operating system's choice: the parent opens the rendezvous store on port 0
  and passes the port it got to the workers, so two runs (or two notebooks) never collide.
- An exception in a worker is raised again in the parent as `WorkerError`, with the worker's
  rank, its exception type and message (the worker's traceback is attached as a note), and
  `logged`: what the worker's `sys.excepthook` writes for it, which after `init_process_group`
  is torch's: every line starts with `[rank0]: ` (the lines a real job's log shows). The
  first error to arrive is the one raised (the others are often its consequence, "peer gone");
  if several ranks raised that same error, the lowest of their ranks is named.
- What the workers print (Python or C++, e.g. DDP's warnings) goes to `last_logs`, not the cell.
- No process outlives `run`: on success, on a worker's error, on the time limit, or when the
  cell is interrupted, every worker still alive is terminated (then killed) before `run` returns.
  A worker also exits by itself if its parent disappears.
"""
from __future__ import annotations

import datetime
import io
import os
import queue as queue_module
import sys
import tempfile
import threading
import time
import traceback

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

HOST = "127.0.0.1"
# forkserver: one server process, started on the first run, imports torch and what DDP imports
# (torch._dynamo: seconds) once; each run's workers are forked from it in a fraction of a second.
# It ends with the kernel. Where there is no forkserver (Windows), every run spawns afresh.
START_METHOD = "forkserver" if "forkserver" in mp.get_all_start_methods() else "spawn"
PRELOAD = ["torch", "torch.distributed", "torch.nn.parallel", "torch._dynamo", "helpers.ddp_steps"]
GRACE = 5.0        # seconds the other ranks get to report once one rank has failed
last_pids: list = []   # the worker processes of the latest run (tests and notebooks check none is left)
last_logs: dict = {}   # {rank: what the worker wrote to stdout/stderr (torch's C++ warnings too)} of the latest run


class WorkerError(RuntimeError):
    """A worker process raised. `rank`, `kind` (its exception type's name), `message`,
    `worker_traceback`; `logged`: the traceback as the worker's sys.excepthook writes it (torch's,
    after init_process_group: each line prefixed `[rank<r>]: `); `errors` holds every failed
    rank's (kind, message)."""

    def __init__(self, rank: int, world_size: int, kind: str, message: str, worker_traceback: str, errors: dict,
                 logged: str = ""):
        super().__init__(f"rank {rank} of {world_size} raised {kind}: {message}")
        self.rank, self.kind, self.message = rank, kind, message
        self.worker_traceback, self.errors, self.logged = worker_traceback, errors, logged


class WorkerTimeout(TimeoutError):
    """The workers did not all finish within the time limit (they were terminated)."""


def _leave_with_parent(parent_pid: int) -> None:
    while os.getppid() == parent_pid:
        time.sleep(0.5)
    os._exit(3)                    # the parent is gone (kernel killed): do not linger as an orphan


def _to_log(path) -> None:
    """Send this process's fd 1 and 2 (Python and C++ writes) to a file: a notebook cell shows
    nothing the kernel did not print itself, under JupyterLab and pytest alike."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)


def _as_logged(err: BaseException) -> str:
    """What this process's sys.excepthook would write for `err`, had it gone uncaught (torch's
    hook, installed by init_process_group, prefixes every line with `[rank<r>]: `)."""
    saved, sys.stderr = sys.stderr, io.StringIO()
    try:
        sys.excepthook(type(err), err, err.__traceback__)
        return sys.stderr.getvalue()
    except Exception:
        return ""
    finally:
        sys.stderr = saved


def _worker(rank, world_size, port, fn, kwargs, results, timeout, log_path):
    _to_log(log_path)
    threading.Thread(target=_leave_with_parent, args=(os.getppid(),), daemon=True).start()
    torch.set_num_threads(1)       # two processes on a small CPU: one thread each
    try:
        limit = datetime.timedelta(seconds=timeout)
        store = dist.TCPStore(HOST, port, is_master=False, timeout=limit)
        dist.init_process_group("gloo", store=store, rank=rank, world_size=world_size, timeout=limit)
        value = fn(rank, world_size, **kwargs)
        buffer = io.BytesIO()
        torch.save(value, buffer)      # plain bytes: no shared-memory handles outliving this process
        report = (rank, "ok", buffer.getvalue())
    except BaseException as err:
        # when it happened: the parent names the first failure, not its echo on the other ranks
        report = (rank, "error", (type(err).__name__, str(err), traceback.format_exc(), time.time(), _as_logged(err)))
    results.put(report)                # before leaving the group: leaving makes the peers fail
    if dist.is_initialized():
        dist.destroy_process_group()


def _check(fn, world_size, timeout) -> None:
    if not callable(fn):
        raise TypeError(f"run() needs a function to run in each process, got {type(fn).__name__}")
    if getattr(fn, "__module__", "__main__") == "__main__" or "<locals>" in getattr(fn, "__qualname__", ""):
        raise ValueError(f"{getattr(fn, '__qualname__', fn)!r} is defined in the notebook (or inside a function): "
                         "spawned processes cannot import it. Put it in a module (e.g. helpers/ddp_steps.py)")
    if not isinstance(world_size, int) or isinstance(world_size, bool) or not 1 <= world_size <= 8:
        raise ValueError(f"world_size must be an int from 1 to 8 (processes on this machine), got {world_size!r}")
    if not isinstance(timeout, (int, float)) or not timeout > 0:
        raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")


def _stop(procs) -> None:
    procs = [p for p in procs if p.pid is not None]       # started ones only
    for p in procs:
        if p.is_alive():
            p.terminate()
    for p in procs:
        p.join(2.0)
        if p.is_alive():
            p.kill()
            p.join()


def _collect(procs, results, timeout):
    """{rank: ("ok", bytes) | ("error", (kind, message, traceback, time, logged))}, waiting at most
    `timeout` seconds."""
    reports, deadline = {}, time.monotonic() + timeout
    while len(reports) < len(procs):
        now = time.monotonic()
        if now > deadline:
            if any(kind == "error" for kind, _ in reports.values()):
                break                  # the others are stuck waiting for the failed rank
            missing = sorted(set(range(len(procs))) - set(reports))
            raise WorkerTimeout(f"ranks {missing} did not finish within {timeout:g} s (terminated)")
        try:
            rank, kind, payload = results.get(timeout=0.1)
            reports[rank] = (kind, payload)
            if kind == "error":
                deadline = min(deadline, time.monotonic() + GRACE)
        except queue_module.Empty:
            for rank, p in enumerate(procs):
                if rank not in reports and p.exitcode is not None and results.empty():
                    reports[rank] = ("error", ("ProcessExit", f"exited with code {p.exitcode} without a report",
                                                "", time.time(), ""))
    return reports


def run(fn, world_size: int = 2, timeout: float = 60.0, **kwargs) -> list:
    """Run `fn(rank, world_size, **kwargs)` in `world_size` new processes joined in one gloo
    group; return their return values in rank order, or raise the first error a worker reported."""
    _check(fn, world_size, timeout)
    ctx = mp.get_context(START_METHOD)
    if START_METHOD == "forkserver":
        ctx.set_forkserver_preload(PRELOAD)
    # the rendezvous store, on a port the OS picks; the workers connect to it as clients
    store = dist.TCPStore(HOST, 0, is_master=True, wait_for_workers=False,
                          timeout=datetime.timedelta(seconds=timeout))
    results = ctx.Queue()
    logs = tempfile.TemporaryDirectory(prefix="ddp-logs-")
    log_paths = [os.path.join(logs.name, f"rank{rank}.log") for rank in range(world_size)]
    procs = [ctx.Process(target=_worker, daemon=True,
                         args=(rank, world_size, store.port, fn, kwargs, results, timeout, log_paths[rank]))
             for rank in range(world_size)]
    try:
        for p in procs:
            p.start()
        last_pids[:] = [p.pid for p in procs]
        reports = _collect(procs, results, timeout)
    finally:
        _stop(procs)
        results.close()
        results.join_thread()
        del store
        last_logs.clear()
        last_logs.update({rank: _read(path) for rank, path in enumerate(log_paths)})
        logs.cleanup()
    errors = {rank: payload for rank, (kind, payload) in reports.items() if kind == "error"}
    if errors:
        # the first error raised is the cause (the other ranks' are often "peer gone");
        # when several ranks raised that same error, name the lowest of them, so a re-run says the same
        first = _gist(min(errors.values(), key=lambda payload: payload[3]))
        rank = min(r for r, payload in errors.items() if _gist(payload) == first)
        kind, message, worker_tb, _, logged = errors[rank]
        err = WorkerError(rank, world_size, kind, message, worker_tb,
                          {r: payload[:2] for r, payload in errors.items()}, logged)
        err.add_note(f"worker traceback (rank {rank}):\n{worker_tb}")
        raise err
    return [torch.load(io.BytesIO(reports[rank][1]), weights_only=True) for rank in range(world_size)]


def _gist(payload) -> tuple:
    """An error's type and the start of its message: the same error on two ranks may name its
    own rank further on (DDP: "... did not receive grad for rank 1")."""
    return payload[0], payload[1][:60]


def _read(path) -> str:
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except FileNotFoundError:
        return ""


def pids_alive(pids) -> list:
    """The pids among `pids` that are still running (not exited, not a zombie)."""
    alive = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            continue
        if state not in ("Z", "X"):
            alive.append(pid)
    return alive
