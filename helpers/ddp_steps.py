"""The training steps notebook 13 runs under DistributedDataParallel, one per process.

Each `fn(rank, world_size, ...)` runs inside `helpers.distributed.run` (gloo is already set up)
and returns plain data: every parameter's gradient, and how many all-reduce calls and bytes
DDP's communication hook saw on this rank. They live in a module, not in the notebook, because
spawned processes import the function they run. `reference` is the same step in one process.
"""
from __future__ import annotations

from contextlib import nullcontext

import torch
from torch import nn
from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.checkpoint import checkpoint

BATCH = 4      # samples per rank


class TwoHeads(nn.Module):
    """A shared trunk and `heads` heads (1 or 2): 03's multi-task model, small."""

    def __init__(self, heads: int = 2):
        super().__init__()
        torch.manual_seed(0)                 # the same initial weights in every process
        self.trunk = nn.Linear(4, 8)
        self.heads = nn.ModuleList(nn.Linear(8, 1) for _ in range(heads))

    def forward(self, x):
        h = torch.tanh(self.trunk(x))
        return [head(h) for head in self.heads]


def batch(rank: int, n: int = BATCH) -> torch.Tensor:
    """Rank `rank`'s own samples (each rank sees different data, as under a DistributedSampler)."""
    return torch.randn(n, 4, generator=torch.Generator().manual_seed(100 + rank))


def two_losses(outputs):
    """loss1 from the first head, loss2 from the last (the same head when there is only one)."""
    return outputs[0].pow(2).mean(), outputs[-1].abs().mean()


def count_allreduce(ddp: DDP) -> dict:
    """Register a communication hook that counts DDP's all-reduce calls and their bytes, then
    does what DDP does by default (allreduce_hook: sum over ranks, divide by world size)."""
    stats = {"calls": 0, "bytes": 0}

    def hook(state, bucket):
        stats["calls"] += 1
        stats["bytes"] += bucket.buffer().numel() * bucket.buffer().element_size()
        return allreduce_hook(state, bucket)

    ddp.register_comm_hook(None, hook)
    return stats


def grads(model: nn.Module) -> dict:
    return {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}


def summed_or_sequential(rank, world_size, heads=2, how="sum", find_unused_parameters=False):
    """03's question under DDP: one backward on loss1 + loss2, or loss1 then loss2."""
    model = TwoHeads(heads)
    ddp = DDP(model, find_unused_parameters=find_unused_parameters)
    stats = count_allreduce(ddp)
    loss1, loss2 = two_losses(ddp(batch(rank)))
    if how == "sum":
        (loss1 + loss2).backward()
    else:
        loss1.backward(retain_graph=True)
        loss2.backward()
    return {"grads": grads(model), **stats}


def reference(world_size: int, heads: int = 2, losses=(1, 2), ranks=None) -> dict:
    """The same step in one process, on the samples of `ranks` (default: every rank's, at once):
    the gradient of the sum of `losses` (1: loss1, 2: loss2). With every rank and both losses,
    this is what DDP should give: a mean loss over all the samples."""
    model = TwoHeads(heads)
    ranks = range(world_size) if ranks is None else ranks
    loss1, loss2 = two_losses(model(torch.cat([batch(r) for r in ranks])))
    sum(loss for n, loss in ((1, loss1), (2, loss2)) if n in losses).backward()
    return grads(model)


def accumulate(rank, world_size, micro_batches=4, no_sync=False):
    """05's question under DDP: `micro_batches` backwards, then one step; with or without no_sync()
    on every micro-batch but the last."""
    model = TwoHeads(heads=1)
    ddp = DDP(model)
    stats = count_allreduce(ddp)
    pieces = batch(rank, BATCH * micro_batches).split(BATCH)
    for i, x in enumerate(pieces):
        quiet = no_sync and i < len(pieces) - 1
        with ddp.no_sync() if quiet else nullcontext():
            out, = ddp(x)
            (out.pow(2).mean() / len(pieces)).backward()
    return {"grads": grads(model), **stats}


class Checkpointed(nn.Module):
    """inp -> block (checkpointed, `times` times: the same weights each time) -> out."""

    def __init__(self, use_reentrant: bool, times: int = 1, input_layer: bool = True):
        super().__init__()
        torch.manual_seed(0)
        self.inp = nn.Linear(4, 8) if input_layer else None
        self.block = nn.Sequential(nn.Linear(8, 8), nn.Tanh())
        self.out = nn.Linear(8, 1)
        self.use_reentrant, self.times = use_reentrant, times

    def forward(self, x):
        h = self.inp(x) if self.inp is not None else x.repeat(1, 2)   # no input layer: h needs no grad
        for _ in range(self.times):
            h = checkpoint(self.block, h, use_reentrant=self.use_reentrant)
        return self.out(h)


def checkpointed(rank, world_size, use_reentrant, times=1, input_layer=True, steps=2, **ddp_options):
    """`steps` training steps of a checkpointed model under DDP(**ddp_options)."""
    model = Checkpointed(use_reentrant, times, input_layer)
    ddp = DDP(model, **ddp_options)
    stats = count_allreduce(ddp)
    for step in range(steps):
        model.zero_grad()
        ddp(batch(rank + 10 * step)).pow(2).mean().backward()
    return {"grads": grads(model), **stats}


class TwoBig(nn.Module):
    """Two parameters of 16 MiB each (float32): together more than DDP's default bucket."""

    def __init__(self):
        super().__init__()
        self.a = nn.Parameter(torch.zeros(4 * 2**20))
        self.b = nn.Parameter(torch.zeros(4 * 2**20))

    def forward(self, x):
        return x * (self.a.sum() + self.b.sum())


def buckets(rank, world_size, steps=3):
    """DDP's bucket cap with its default `bucket_cap_mb`, and the all-reduce calls of each step
    for a model of 32 MiB of gradients."""
    ddp = DDP(TwoBig())
    stats = count_allreduce(ddp)
    calls = []
    for _ in range(steps):
        before = stats["calls"]
        ddp(torch.ones(1)).sum().backward()
        calls.append(stats["calls"] - before)
    return {"bucket_bytes_cap": ddp.bucket_bytes_cap, "calls_per_step": calls}


def changing_graph(rank, world_size, losses_per_step=((1, 2), (1,), (1, 2)), **ddp_options):
    """TwoHeads(2) trained one step per entry of `losses_per_step`, each a backward on the sum of
    the losses it names (1: loss1, head 1; 2: loss2, head 2): a step without loss 2 leaves head 2
    unused."""
    model = TwoHeads(heads=2)
    ddp = DDP(model, **ddp_options)
    stats = count_allreduce(ddp)
    for step, losses in enumerate(losses_per_step):
        model.zero_grad(set_to_none=True)
        loss1, loss2 = two_losses(ddp(batch(rank + 10 * step)))
        sum(loss for n, loss in ((1, loss1), (2, loss2)) if n in losses).backward()
    return {"grads": grads(model), **stats}


def no_sync_split(rank, world_size):
    """Where no_sync() has to be: one micro-batch run with only its forward inside no_sync(), another
    with only its backward inside. Returns the all-reduce calls each made."""
    calls = {}
    for where in ("forward", "backward"):
        ddp = DDP(TwoHeads(heads=1))
        stats = count_allreduce(ddp)
        with ddp.no_sync() if where == "forward" else nullcontext():
            out, = ddp(batch(rank))
        with ddp.no_sync() if where == "backward" else nullcontext():
            out.pow(2).mean().backward()
        calls[where] = stats["calls"]
    return calls


def loss_reduction(rank, world_size, reduction="mean"):
    """One step of TwoHeads(1) under DDP, its loss a mean or a sum over this rank's samples."""
    model = TwoHeads(heads=1)
    ddp = DDP(model)
    out, = ddp(batch(rank))
    loss = out.pow(2)
    (loss.mean() if reduction == "mean" else loss.sum()).backward()
    return {"grads": grads(model)}


def reference_reduction(world_size, reduction="mean"):
    """`loss_reduction` in one process, on every rank's samples at once."""
    model = TwoHeads(heads=1)
    out, = model(torch.cat([batch(r) for r in range(world_size)]))
    loss = out.pow(2)
    (loss.mean() if reduction == "mean" else loss.sum()).backward()
    return grads(model)


def what_ddp_finds(use_reentrant: bool) -> dict:
    """In one process, what `find_unused_parameters=True` works from: the parameters reachable from
    the output's graph after the forward (DDP walks it to find the unused ones), and how many times
    each parameter's gradient is accumulated in one backward."""
    model = Checkpointed(use_reentrant)
    fired = {name: 0 for name, _ in model.named_parameters()}
    for name, p in model.named_parameters():
        p.register_post_accumulate_grad_hook(lambda p, name=name: fired.update({name: fired[name] + 1}))
    loss = model(batch(0)).pow(2).mean()
    nodes, todo = set(), [loss.grad_fn]
    while todo:
        fn = todo.pop()
        if fn is not None and fn not in nodes:
            nodes.add(fn)
            todo.extend(f for f, _ in fn.next_functions)
    found = {id(fn.variable) for fn in nodes if hasattr(fn, "variable")}
    reachable = [name for name, p in model.named_parameters() if id(p) in found]
    loss.backward()
    return {"reachable": reachable, "accumulated": fired}
