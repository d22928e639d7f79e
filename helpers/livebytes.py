"""How many bytes of saved-for-backward tensors are alive right now, and over a backward pass.

    with LiveSaved() as live:                 # the forward: every saved tensor is counted
        loss1, loss2 = forward()
    live.nbytes                               # alive now (== SavedBytes().nbytes right after the forward)
    with live.during(loss1, loss2):           # a sample each time the engine starts a node
        loss1.backward(retain_graph=True)
        live.mark("after loss1.backward")     # a sample you name
        loss2.backward()
    live.samples                              # [(label, bytes alive), ...]

`helpers.memory.SavedBytes` counts what a forward saved; this module also sees each saved
tensor being released (a backward without `retain_graph`, or the graph being dropped), so
it can say how long the bytes live. Counting is by reference, like `SavedBytes.nbytes`:
a tensor saved by two ops counts twice. Exact and deterministic: sizes come from shapes.

Use it to measure, not to train: under any saved-tensor pack hook, autograd no longer
detects an in-place change to a saved tensor (no "modified by an inplace operation" error).
"""
from __future__ import annotations

import contextlib
import weakref

import torch

from .trace import reachable_nodes


class _Packed:
    """What the graph holds instead of the tensor; its death is the tensor's release."""

    __slots__ = ("tensor", "__weakref__")

    def __init__(self, tensor):
        self.tensor = tensor


class LiveSaved:
    def __init__(self):
        self.nbytes = 0        # saved bytes alive now
        self.count = 0         # saved tensors alive now
        self.peak = 0          # most bytes alive at once
        self.total = 0         # bytes ever saved while the block ran
        self.samples: list = []

    def _pack(self, t: torch.Tensor):
        n = t.numel() * t.element_size()
        # A detached alias (same memory), not `t`: a saved output would otherwise hold its own
        # grad_fn, and that reference cycle would keep the graph alive after it is dropped.
        box = _Packed(t.detach())
        weakref.finalize(box, self._release, n)
        self.nbytes += n
        self.count += 1
        self.total += n
        self.peak = max(self.peak, self.nbytes)
        return box

    def _release(self, n: int) -> None:
        self.nbytes -= n
        self.count -= 1

    @staticmethod
    def _unpack(box):
        return box.tensor

    def __enter__(self):
        self._ctx = torch.autograd.graph.saved_tensors_hooks(self._pack, self._unpack)
        self._ctx.__enter__()
        return self

    def __exit__(self, *exc):
        return self._ctx.__exit__(*exc)

    def mark(self, label: str) -> int:
        """Record (label, bytes alive now); returns the bytes."""
        self.samples.append((label, self.nbytes))
        return self.nbytes

    @contextlib.contextmanager
    def during(self, *roots):
        """Sample the bytes alive each time the engine is about to run a node of `roots`' graph.

        A node's saved tensors are released right after it runs (without retain_graph),
        so the sample at node k shows what nodes 0..k-1 freed. The hooks are removed on
        exit: left in place they would keep the graph (and its saved tensors) alive.
        """
        handles = []
        for fn in reachable_nodes(*roots):
            def prehook(grad_outputs, name=fn.name()):
                self.mark(name)
            handles.append(fn.register_prehook(prehook))
        try:
            yield self
        finally:
            for h in handles:
                h.remove()


def timeline_figure(series: dict, title: str, marks: dict | None = None):
    """A step chart of {name: [bytes alive at each engine step]}, in kB.

    marks: {name: [(step, text), ...]} labels on a series' line at that step, written above
    the line; with a third element "right", written to the right of the point instead.
    """
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.8, 3.4), dpi=100)
    top = max(max(ys) for ys in series.values()) / 1000
    longest = max(len(ys) for ys in series.values())
    room = 0
    for name, ys in series.items():
        line, = ax.step(range(len(ys)), [y / 1000 for y in ys], where="post", label=name, linewidth=2)
        for step, text, *where in (marks or {}).get(name, []):
            right = where == ["right"]
            room = max(room, len(text) * 0.55 if right else 0)   # x units a label of 8pt needs, roughly
            ax.annotate(text, (step, ys[step] / 1000), xytext=(5, 0) if right else (0, 5),
                        textcoords="offset points", ha="left" if right else "center",
                        va="center" if right else "bottom", fontsize=8, color=line.get_color())
    ax.set_title(title, fontsize=11)
    ax.set_xlabel("engine steps (nodes run, in order)")
    ax.set_ylabel("saved tensors alive (kB)")
    ax.set_ylim(0, top * 1.15)
    ax.set_xlim(-1, longest + room * longest / 50)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=9, loc="lower left")
    ax.spines[["top", "right"]].set_visible(False)
    fig.tight_layout()
    plt.close(fig)
    return fig
