"""What backward frees, and where a second backward stops.

    saved_states(snapshot(e))               # {'PowBackward0.self': 'freed', ...}
    with where_backward_stops(e) as stop:   # re-raises; `stop` says which node failed
        e.backward()
    stop.stopped_in                          # 'MulBackward0'

`where_backward_stops` works through public node hooks (`Node.register_prehook` /
`register_hook`) and changes nothing the graph does. (What memory a graph keeps alive:
`helpers.memory.LiveSaved`.)
"""
from __future__ import annotations

import contextlib

from .trace import reachable_nodes
from .walk import Snapshot


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
