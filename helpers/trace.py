"""Record what the autograd engine really does during a backward call.

    with BackwardTrace(loss1, loss2) as tr:     # hooks every node reachable from the roots
        loss1.backward(retain_graph=True)
    tr.order      # node names in the order the engine ran them
    tr.counts     # how many times each node ran (a shared trunk runs once per backward)

Hooks are registered on the graph's nodes (`grad_fn.register_prehook` / `register_hook`),
so the order is the engine's, not a simulation. They are removed on exit.

Optional callbacks see the engine at work (helpers.stepper uses them):
`on_start(fn)` runs in a node's pre-hook, just before the node computes;
`on_step(step, fn)` runs in its post-hook, right after it computed and before the
engine releases its saved tensors (with retain_graph=False the release comes next).
`tr.started` lists the node indices whose pre-hook ran: a node that started but has no
step is the one that raised.
"""
from __future__ import annotations

from collections import Counter, deque

import torch

from .walk import COUNT_LIMIT, GraphInputError


def reachable_nodes(*roots, limit: int = COUNT_LIMIT) -> list:
    """Every grad_fn node reachable from `roots` (tensors), breadth-first, iteratively.

    Bounded by the same ceiling as the renderer's walk (helpers.walk.COUNT_LIMIT): in
    torch 2.13, touching the nodes of a very deep graph from Python makes freeing it
    later crash the process, so a graph larger than `limit` is refused, not walked.
    """
    seen, order = set(), []
    queue = deque(t.grad_fn for t in roots if isinstance(t, torch.Tensor) and t.grad_fn is not None)
    while queue:
        fn = queue.popleft()
        if fn in seen:
            continue
        if len(order) >= limit:
            raise GraphInputError(
                f"this graph has more than {limit:,} nodes: too many to hook or trace node by node. "
                "Use a smaller example (fewer layers or steps).")
        seen.add(fn)
        order.append(fn)
        queue.extend(n for n, _ in fn.next_functions if n is not None)
    return order


class Step:
    """One node run by the engine: its name, its position, the gradients in and out."""

    def __init__(self, index, node_index, name, grad_in, grad_out):
        self.index, self.node_index, self.name = index, node_index, name
        self.grad_in, self.grad_out = grad_in, grad_out

    def __repr__(self):
        return f"Step({self.index}, {self.name})"


class BackwardTrace:
    def __init__(self, *roots, keep_grads: bool = True, on_start=None, on_step=None):
        self.nodes = reachable_nodes(*roots)
        self.index = {fn: i for i, fn in enumerate(self.nodes)}
        self.keep_grads = keep_grads
        self.on_start, self.on_step = on_start, on_step
        self.steps: list[Step] = []
        self.started: list[int] = []
        self._handles = []

    def _prehook(self, fn):
        def prehook(grad_outputs):
            self.started.append(self.index[fn])
            if self.on_start is not None:
                self.on_start(fn)
        return prehook

    def _hook(self, fn):
        def hook(grad_inputs, grad_outputs):
            # for a Node hook: grad_inputs = what it sends to its inputs, grad_outputs = what it received
            def copy(gs):
                if not self.keep_grads:
                    return None
                return tuple(None if g is None else g.detach().clone() for g in gs)
            self.steps.append(Step(len(self.steps), self.index[fn], fn.name(),
                                   copy(grad_outputs), copy(grad_inputs)))
            if self.on_step is not None:
                self.on_step(self.steps[-1], fn)
        return hook

    def __enter__(self):
        for fn in self.nodes:
            self._handles.append(fn.register_prehook(self._prehook(fn)))
            self._handles.append(fn.register_hook(self._hook(fn)))
        return self

    def __exit__(self, *exc):
        for h in self._handles:
            h.remove()
        self._handles.clear()
        return False

    @property
    def order(self) -> list:
        return [s.name for s in self.steps]

    @property
    def counts(self) -> Counter:
        return Counter(s.name for s in self.steps)
