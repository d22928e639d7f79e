"""Record what the autograd engine really does during a backward call.

    with BackwardTrace(loss1, loss2) as tr:     # hooks every node reachable from the roots
        loss1.backward(retain_graph=True)
    tr.order      # node names in the order the engine ran them
    tr.counts     # how many times each node ran (a shared trunk runs once per backward)

Hooks are registered on the graph's nodes (`grad_fn.register_prehook` / `register_hook`),
so the order is the engine's, not a simulation. They are removed on exit.

Optional callbacks see the engine at work (backward_twice.stepper uses them):
`on_start(fn)` runs in a node's pre-hook, just before the node computes;
`on_step(step, fn)` runs in its post-hook, right after it computed and before the
engine releases its saved tensors (with retain_graph=False the release comes next).
`tr.started` lists the node indices whose pre-hook ran, in order; `tr.unfinished` is the
node that started and did not finish: the one that raised.

Where a failing backward stopped, for a notebook cell that fails live:

    with where_backward_stops(e) as stop:   # re-raises; `stop` says which node failed
        e.backward()
    stop.stopped_in                          # 'MulBackward0'
"""
from __future__ import annotations

import contextlib
from collections import Counter

import torch

from .snapshot import GraphInputError, gc_paused
from .walk import COUNT_LIMIT, is_leaf_node, nodes_under


def reachable_nodes(*roots, limit: int = COUNT_LIMIT) -> list[torch.autograd.graph.Node]:
    """Every grad_fn node reachable from `roots` (tensors), breadth-first, iteratively.

    Bounded by the same ceiling as the renderer's walk (backward_twice.walk.COUNT_LIMIT): in
    torch 2.13, touching the nodes of a very deep graph from Python makes freeing it
    later crash the process, so a graph larger than `limit` is refused, not walked.

    Example (run by tests/test_docstrings.py):

        >>> import torch, backward_twice as bt
        >>> x = torch.ones(3, requires_grad=True)
        >>> [node.name() for node in bt.reachable_nodes((x.exp() * 2).sum())]
        ['SumBackward0', 'MulBackward0', 'ExpBackward0', 'torch::autograd::AccumulateGrad']
    """
    order, capped = nodes_under([t.grad_fn for t in roots if isinstance(t, torch.Tensor)], limit)
    if capped:
        raise GraphInputError(
            f"this graph has more than {limit:,} nodes: too many to hook or trace node by node. "
            "Use a smaller example (fewer layers or steps).")
    return order


class Step:
    """One node run by the engine: its name, its position, the gradients in and out."""

    def __init__(self, index: int, node_index: int, name: str,
                 grad_in: tuple[torch.Tensor | None, ...] | None, grad_out: tuple[torch.Tensor | None, ...] | None):
        self.index, self.node_index, self.name = index, node_index, name
        self.grad_in, self.grad_out = grad_in, grad_out

    def __repr__(self):
        return f"Step({self.index}, {self.name})"


class BackwardTrace:
    """Record the order in which a backward call runs the nodes behind `roots`, and the gradients
    each received and sent (`keep_grads`), with public node hooks only: it changes nothing the graph
    does. After the block: `.order` (node names in run order), `.counts`, `.steps`, `.unfinished`
    (a node that started but never finished: where a failing backward stopped).

    Example (run by tests/test_docstrings.py):

        >>> import torch, backward_twice as bt
        >>> x = torch.ones(3, requires_grad=True)
        >>> y = (x.exp() * 2).sum()
        >>> with bt.BackwardTrace(y) as tr:
        ...     y.backward()
        >>> tr.order
        ['SumBackward0', 'MulBackward0', 'ExpBackward0', 'torch::autograd::AccumulateGrad']
    """

    def __init__(self, *roots, keep_grads: bool = True, on_start=None, on_step=None, starts: bool = True,
                 hooked=None):
        with gc_paused():
            self.nodes = reachable_nodes(*roots)
            self.index = {fn: i for i, fn in enumerate(self.nodes)}
        # hooked: the nodes to hook (watch(): the ones its picture draws), or None for all. The
        # others are not hooked (20k hooks cost more than the backward call itself): which of them
        # a backward call will run is read from the engine's plan for that call (`planned`), in
        # the call, when a hooked node first finishes; their order among themselves is not known.
        self.hooked = None if hooked is None else {self.index[fn] for fn in hooked if fn in self.index}
        if self.hooked is not None and len(self.hooked) == len(self.nodes):
            self.hooked = None
        self._plans: dict[int, list[int]] = {}   # graph task id -> indices of unhooked nodes it runs
        self._late_ran: list[int] = []   # unhooked nodes the plan could not decide, hooked in the call
        self.keep_grads = keep_grads
        self.on_start, self.on_step = on_start, on_step
        # starts=False: no pre-hooks (so no `started`, `unfinished`), and without keep_grads or
        # callbacks each post-hook only notes the node's index: one hook a node, and nothing made
        # during the backward call but an int (watch(): its cost on 20k nodes)
        self.starts = starts
        self._light = not starts and not keep_grads and on_step is None and on_start is None
        if self.hooked is not None and not self._light:
            raise ValueError("BackwardTrace(hooked=...) notes only which nodes ran: it takes starts=False, "
                             "keep_grads=False and no callbacks")
        self._ran: list[int] = []
        self._steps: list[Step] = []
        self.started: list[int] = []   # node indices, as the engine started them
        self._running: list[int] = []  # started, not finished yet: a stack (a node may run a backward)
        self._handles = []

    def _prehook(self, fn):
        def prehook(grad_outputs):
            self.started.append(self.index[fn])
            self._running.append(self.index[fn])
            if self.on_start is not None:
                self.on_start(fn)
        return prehook

    @property
    def steps(self) -> list[Step]:
        """The nodes that ran, in the engine's order, as Steps."""
        if self._ran:       # the light hooks' indices, made Steps when first asked for
            base = len(self._steps)
            self._steps.extend([Step(base + k, i, self.nodes[i].name(), None, None)
                                for k, i in enumerate(self._ran)])
            self._ran.clear()
        return self._steps

    def ran_order(self) -> list[int]:
        """The indices (in `nodes`) of the nodes that ran, in the engine's order: `steps` without
        making a Step of each (watch() on 20k nodes lists 12 of them)."""
        return [s.node_index for s in self._steps] + self._ran

    def _hook(self, fn):
        if self._light:
            ran, i = self._ran, self.index[fn]
            if self.hooked is None:
                def light(grad_inputs, grad_outputs):
                    ran.append(i)
                return light
            plans, plan = self._plans, self._plan

            def light_and_plan(grad_inputs, grad_outputs):
                ran.append(i)
                task = torch._C._current_graph_task_id()
                if task not in plans:
                    plans[task] = plan()
            return light_and_plan

        def hook(grad_inputs, grad_outputs):
            # for a Node hook: grad_inputs = what it sends to its inputs, grad_outputs = what it received
            def copy(gs):
                if not self.keep_grads:
                    return None
                return tuple(None if g is None else g.detach().clone() for g in gs)
            i = self.index[fn]
            if i in self._running:   # close its latest start
                del self._running[len(self._running) - 1 - self._running[::-1].index(i)]
            self.steps.append(Step(len(self.steps), i, fn.name(),
                                   copy(grad_outputs), copy(grad_inputs)))
            if self.on_step is not None:
                self.on_step(self.steps[-1], fn)
        return hook

    def _plan(self) -> list[int]:
        """Inside a backward call: the indices of the unhooked nodes the engine will run in it
        (its plan for this call, fixed when the call started). The engine's answer for a node is
        "will execute or has its gradient captured": an autograd.grad() input's node is captured
        and not run, so a node counts only when it is a leaf or one of its inputs is in the plan
        too (a node runs only to send gradients on)."""
        will, hooked = torch._C._will_engine_execute_node, self.hooked
        memo: dict = {}

        def planned(fn) -> bool:
            got = memo.get(fn)
            if got is None:
                try:
                    got = bool(will(fn))
                except RuntimeError:   # a leaf inside autograd.grad(): not run, maybe captured
                    got = None
                memo[fn] = got
            return got

        out = []
        for i, fn in enumerate(self.nodes):
            if i in hooked or not planned(fn):
                continue
            nexts = [n for n, _ in fn.next_functions if n is not None]
            if not nexts and is_leaf_node(fn) or any(planned(n) for n in nexts):
                out.append(i)
            elif any(memo[n] is None for n in nexts):
                # inside autograd.grad(), whose leaves the engine will not answer for: the node runs
                # if one of those leaves is an input, and not if it is itself an input only
                # captured. Hooked now, to see (the plan is read when a drawn node first ran).
                self._handles.append(fn.register_hook(self._late(i)))
        return out

    def _late(self, i):
        def late(grad_inputs, grad_outputs):
            self._late_ran.append(i)
        return late

    @property
    def planned(self) -> int:
        """How many runs of unhooked nodes the backward calls planned (0 when every node is hooked)."""
        return sum(len(p) for p in self._plans.values()) + len(self._late_ran)

    def __enter__(self):
        with gc_paused():     # two closures and handles a node: no collection of torch's heap meanwhile
            for i, fn in enumerate(self.nodes):
                if self.hooked is not None and i not in self.hooked:
                    continue
                if self.starts:
                    self._handles.append(fn.register_prehook(self._prehook(fn)))
                self._handles.append(fn.register_hook(self._hook(fn)))
        return self

    def __exit__(self, *exc):
        for h in self._handles:
            h.remove()
        self._handles.clear()
        return False

    @property
    def recording(self) -> bool:
        """True inside the with-block (its hooks are registered)."""
        return bool(self._handles)

    @property
    def order(self) -> list[str]:
        return [s.name for s in self.steps]

    @property
    def counts(self) -> Counter[str]:
        return Counter(s.name for s in self.steps)

    @property
    def unfinished(self):
        """The node (grad_fn) the engine started and did not finish, or None: the one that raised.

        The engine runs a node's pre-hook, the node, then its post-hook; on the CPU one node at
        a time. So each finish closes its node's latest start, and what stays open is the node
        that raised; when several stay open (a node whose own backward runs another backward,
        or an earlier failed call inside the same trace), the latest start is the one that
        raised last. A node that finished in an earlier call and raises now is found too.
        """
        return self.nodes[self._running[-1]] if self._running else None


# --------------------------------------------------------------------------------
class Stop:
    """Result of `where_backward_stops`: the nodes that ran, and the one that raised."""

    def __init__(self):
        self.ran: list[str] = []          # node names that finished, in engine order
        self.stopped_in: str | None = None  # name of the node that started but did not finish
        self.raised: BaseException | None = None   # the exception, if the block raised

    def __repr__(self) -> str:
        ran = ", ".join(self.ran) or "nothing"
        if self.raised is None:
            return f"finished: ran {ran}"
        where = self.stopped_in or "before any node of the graph"
        return f"ran {ran}; stopped in {where} ({type(self.raised).__name__})"


def _short(fn) -> str:
    return fn.name().replace("torch::autograd::", "")


@contextlib.contextmanager
def where_backward_stops(*roots):
    """Hook every node behind `roots`; after the block, say which node started but never finished
    (`BackwardTrace.unfinished`). The exception is re-raised (a cell that fails live still fails).
    Public node hooks only: it changes nothing the graph does.

    Example (run by tests/test_docstrings.py):

        >>> import torch, backward_twice as bt
        >>> x = torch.ones(3, requires_grad=True)
        >>> y = (x.exp() * 2).sum()
        >>> y.backward(retain_graph=False)
        >>> try:
        ...     with bt.where_backward_stops(y) as stop:
        ...         y.backward()              # the graph was freed by the first call
        ... except RuntimeError:
        ...     pass
        >>> stop.stopped_in
        'MulBackward0'
    """
    stop = Stop()
    with BackwardTrace(*roots, keep_grads=False) as trace:
        try:
            yield stop
        except BaseException as exc:
            stop.raised = exc
            failing = trace.unfinished
            stop.stopped_in = None if failing is None else _short(failing)
            raise
        finally:
            stop.ran = [_short(trace.nodes[s.node_index]) for s in trace.steps]


def next_sequence_nr() -> int:
    """The sequence number the next autograd node will get (it makes one to find out)."""
    with torch.enable_grad():
        probe = torch.empty(0, requires_grad=True).neg()
    return probe.grad_fn._sequence_nr() + 1
