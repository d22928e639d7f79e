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

from .trace import BackwardTrace
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

    The engine calls a node's pre-hook just before running it and its hook just after
    (helpers.trace.BackwardTrace records both), so a node with a start and no finish is
    the one that raised. The exception is re-raised (a cell that fails live still fails).
    """
    stop = Stop()
    with BackwardTrace(*roots, keep_grads=False) as trace:
        try:
            yield stop
        except BaseException as exc:
            stop.raised = exc
            finished = {s.node_index for s in trace.steps}
            stop.stopped_in = next((_short(trace.nodes[i]) for i in trace.started if i not in finished), None)
            raise
        finally:
            stop.ran = [_short(trace.nodes[s.node_index]) for s in trace.steps]
