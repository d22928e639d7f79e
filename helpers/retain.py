"""What backward frees, where a second backward stops, and what memory a graph keeps alive.

    with where_backward_stops(e) as stop:   # re-raises; `stop` says which node failed
        e.backward()
    stop.stopped_in                          # 'MulBackward0'

    with SavedStorages() as st:              # weak references to every saved tensor's storage
        loss = model(x).pow(2).mean()
    loss.backward()
    st.alive_nbytes                          # storage still alive: held by someone else

Both work through public hooks (`Node.register_prehook` / `register_hook`,
`torch.autograd.graph.saved_tensors_hooks`) and change nothing the graph does.
"""
from __future__ import annotations

import contextlib
import weakref

import torch

from .trace import reachable_nodes
from .walk import Snapshot, fmt_bytes


def saved_states(snap: Snapshot) -> dict:
    """{'PowBackward0.self': 'held' or 'freed', ...} for every saved tensor of a snapshot."""
    return {f"{op.name}.{s.slot}": s.state for op, s in snap.saved_tensors()}


# --------------------------------------------------------------------------------
class Stop:
    """Result of `where_backward_stops`: the nodes that ran, and the one that raised."""

    def __init__(self):
        self.ran: list = []          # node names that finished, in engine order
        self.stopped_in = None       # name of the node that started but did not finish
        self.raised = None           # the exception, if the block raised

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
    """Hook every node behind `roots`; after the block, say which node started but never finished.

    The engine calls a node's pre-hook just before running it and its hook just after,
    so a node with a pre-hook call and no hook call is the one that raised.
    The exception is re-raised (a cell that fails live still fails).
    """
    stop = Stop()
    started, finished = [], set()

    def after(fn):
        finished.add(fn)
        stop.ran.append(_short(fn))

    handles = []
    for fn in reachable_nodes(*roots):
        handles.append(fn.register_prehook(lambda grads, fn=fn: started.append(fn)))
        handles.append(fn.register_hook(lambda gi, go, fn=fn: after(fn)))
    try:
        yield stop
    except BaseException as exc:
        stop.raised = exc
        stop.stopped_in = next((_short(fn) for fn in started if fn not in finished), None)
        raise
    finally:
        for h in handles:
            h.remove()


# --------------------------------------------------------------------------------
class SavedStorages:
    """Weak references to the storage of every tensor saved for backward in the block.

    A storage is *alive* while anything holds it: the graph (until backward frees its
    saved tensors), the model (parameters), your own variables (inputs, named outputs).
    `alive_nbytes` after a backward is therefore memory that backward did not give back.

    Each storage is counted once, however many ops saved it (a ReLU output saved by
    ReLU and by the next Linear is one buffer). Like every `saved_tensors_hooks` user,
    it does not see Python numbers that an op saved as 0-d tensors (`x * 2` saves the 2).
    Hooks do not nest: inside another `saved_tensors_hooks` block only the innermost counts.
    Use it to measure, not to train: with any pack hook, autograd no longer detects an in-place
    change to a saved tensor (the 'modified by an inplace operation' error does not fire).
    """

    def __init__(self):
        self._entries: list = []    # (weakref to storage, nbytes), one per distinct storage
        self._index: dict = {}      # id(storage) -> position in _entries (ids are reused after death)
        self.references = 0         # how many times a tensor was saved (with repeats)

    def _pack(self, t: torch.Tensor):
        self.references += 1
        s = t.untyped_storage()
        i = self._index.get(id(s))
        if i is None or self._entries[i][0]() is not s:
            self._index[id(s)] = len(self._entries)
            self._entries.append((weakref.ref(s), s.nbytes()))
        # Not `return t`: a saved *output* holds its grad_fn, the node holds the packed
        # object, and that cycle (through C++) would keep a retained graph alive after
        # its tensors are deleted. A detached alias shares the storage without the cycle.
        return t.detach()

    def __enter__(self):
        self._ctx = torch.autograd.graph.saved_tensors_hooks(self._pack, lambda t: t)
        self._ctx.__enter__()
        return self

    def __exit__(self, *exc):
        return self._ctx.__exit__(*exc)

    @property
    def count(self) -> int:
        """Distinct storages saved."""
        return len(self._entries)

    @property
    def nbytes(self) -> int:
        """Bytes of the distinct storages saved (each counted once)."""
        return sum(n for _, n in self._entries)

    @property
    def alive_count(self) -> int:
        return sum(ref() is not None for ref, _ in self._entries)

    @property
    def alive_nbytes(self) -> int:
        return sum(n for ref, n in self._entries if ref() is not None)

    def __repr__(self) -> str:
        return (f"{self.count} saved storages, {fmt_bytes(self.nbytes)}; "
                f"alive now: {self.alive_count} ({fmt_bytes(self.alive_nbytes)})")
