"""Tiny programs for tests/test_distributed.py to run in worker processes (they must be importable)."""
import time

import torch
import torch.distributed as dist


def sum_of_ranks(rank, world_size):
    """Every rank contributes rank + 1; all_reduce sums them over the gloo group."""
    t = torch.tensor(float(rank + 1))
    dist.all_reduce(t)
    return {"rank": rank, "world_size": dist.get_world_size(), "sum": t}


def fails_on(rank, world_size, bad_rank):
    """`bad_rank` raises; every other rank waits in a collective the failed rank never joins."""
    if rank == bad_rank:
        raise ValueError(f"no data for rank {rank}")
    t = torch.ones(1)
    dist.all_reduce(t)
    return t


def sleeps(rank, world_size, seconds):
    time.sleep(seconds)
    return rank


def prints(rank, world_size):
    print(f"hello from rank {rank}", flush=True)
    return rank


def same_error(rank, world_size):
    """Both ranks raise the same error, rank 1 first; each message ends with its own rank."""
    time.sleep(0.5 if rank == 0 else 0.0)
    raise RuntimeError("Expected to mark a variable ready only once. This error is caused by ... "
                       f"(seen on rank {rank})")


def ddp_step(rank, world_size, recorded):
    """One DDP step of a Linear on gloo, under backward_twice's recorder or not: the gradients (issue 27)."""
    import torch
    from torch.nn.parallel import DistributedDataParallel as DDP

    from backward_twice.recorder import Recorder

    torch.manual_seed(0)
    model = DDP(torch.nn.Linear(4, 2))
    x = torch.randn(6, 4) + rank
    rec = Recorder() if recorded else None
    if rec is not None:
        with rec:
            model(x).pow(2).mean().backward()
        assert rec.calls and rec.calls[0].kind == "backward"
    else:
        model(x).pow(2).mean().backward()
    return [p.grad.clone() for p in model.parameters()]
