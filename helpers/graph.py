"""The public drawing API used by the notebooks.

    from helpers.graph import draw, compare, watch

    pic = draw(d, e, names={"a": a, "b": b, "c": c, "d": d, "e": e})
    with watch(d, e, names=...) as w:    # before/after pair around a backward call
        d.backward()
    w                                     # displays both, side by side

Every picture displays as SVG in JupyterLab and has a deterministic text form
(`text/plain`) that nbval compares: no memory addresses, stable node ids.
"""
from __future__ import annotations

import contextlib

from . import render
from .snapshot import Role, SavedState, Snapshot, fmt_bytes, fmt_shape
from .walk import snapshot

STATE_WORDS = {SavedState.HELD: "held", SavedState.FREED: "FREED", SavedState.VALUE: "value",
               SavedState.UNREADABLE: "UNREADABLE"}


def describe(snap: Snapshot) -> str:
    """The deterministic text form of one snapshot."""
    lines = []
    for t in snap.tensors.values():
        if t.role is not Role.LEAF:
            continue
        lines.append(f"leaf {t.name} {fmt_shape(t.shape)} {t.dtype} grad={t.grad}")
    for op in snap.ops.values():
        src = ", ".join(_label(snap, i) for i in op.inputs) or "-"
        made = f" -> {', '.join(op.produces)}" if op.produces else ""
        lines.append(f"{op.id} {op.name}({src}){made}")
        for s in op.saved:
            state = STATE_WORDS[s.state]
            lines.append(f"    {state:5} {s.describe()}")
    for t in snap.tensors.values():
        if t.role is Role.LEAF:
            continue
        kept = f"retains_grad grad={t.grad}" if t.retains_grad else "grad not kept"
        lines.append(f"{t.role} {t.name} {fmt_shape(t.shape)} {t.dtype} {kept}")
    n = snap.count_by_state()
    b = snap.bytes_by_state()
    other = f", {n['unreadable']} unreadable" if "unreadable" in n else ""
    lines.append(f"saved tensors: {n['held']} held ({fmt_bytes(b['held'])}), "
                 f"{n['freed']} freed ({fmt_bytes(b['freed'])}){other}")
    if snap.truncated:
        more = snap.hidden_count
        plus = "+" if snap.count_capped else ""
        kinds = ", ".join(f"{k} x{v}" for k, v in sorted(snap.hidden_by_type.items()))
        lines.append(f"NOT DRAWN: {more}{plus} more nodes beyond max_nodes ({kinds})")
    return "\n".join(lines)


def _label(snap, node_id):
    t = snap.tensors.get(node_id)
    return t.name if t is not None else node_id


class Picture:
    """Something that shows as SVG in JupyterLab and as stable text elsewhere."""

    def __init__(self, dot_source: str, text: str):
        self.dot = dot_source
        self.text = text
        self._svg = None

    @property
    def svg(self) -> str:
        if self._svg is None:
            self._svg = render.svg_from_dot(self.dot)
        return self._svg

    def _repr_mimebundle_(self, include=None, exclude=None):
        # text/html carries the same SVG as an <img>, so a freshly cloned (untrusted) notebook
        # shows the picture, not only its text
        alt = self.text.splitlines()[0] if self.text else "autograd graph"
        return {"image/svg+xml": self.svg, "text/plain": self.text,
                "text/html": render.svg_img(self.svg, alt, style="max-width:100%")}

    def __repr__(self) -> str:
        return self.text

    def save(self, path) -> None:
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.svg)


class GraphPicture(Picture):
    """One snapshot of a graph."""

    def __init__(self, snap: Snapshot, title: str | None = None, highlight=()):
        self.snapshot = snap
        head = f"{title}\n" if title else ""
        super().__init__(render.to_dot(snap, title, highlight), head + describe(snap))


class ComparePicture(Picture):
    """Two snapshots side by side, with what changed between them."""

    def __init__(self, before: Snapshot, after: Snapshot, titles=("before", "after")):
        self.before, self.after = before, after
        text = (f"== {titles[0]} ==\n{describe(before)}\n== {titles[1]} ==\n{describe(after)}\n"
                f"== change ==\n{changes(before, after)}")
        super().__init__(render.pair_dot(before, after, titles), text)


def changes(before: Snapshot, after: Snapshot) -> str:
    """What backward freed and which gradients changed, in words."""
    lines = []
    freed = after.freed_since(before)
    if freed:
        total = sum(s.nbytes or 0 for _, s in freed)
        lines.append(f"freed {len(freed)} saved tensor(s), {fmt_bytes(total)}: "
                     + ", ".join(f"{op.name}.{s.slot}" for op, s in freed))
    else:
        lines.append("freed nothing")
    stale = after.modified_since(before)
    if stale:
        lines.append(f"modified in place since saved: {len(stale)} saved tensor(s): "
                     + ", ".join(f"{op.name}.{s.slot} ({s.modified})" for op, s in stale))
    lines.extend(after.grad_changes_since(before))
    return "\n".join(lines)


def draw(*roots, names=None, title=None, max_nodes=300) -> GraphPicture:
    """A picture of the autograd graph behind `roots` (one or more tensors).

    names: {"a": a, "loss": loss, ...} labels leaves, outputs and intermediates
    (named intermediates that call retain_grad() show their grad).
    max_nodes: beyond this many nodes the rest is summarised, not drawn.
    """
    return GraphPicture(snapshot(*roots, names=names, max_nodes=max_nodes), title)


def compare(before: GraphPicture | Snapshot, after: GraphPicture | Snapshot,
            titles=("before", "after")) -> ComparePicture:
    """Two pictures of the same graph side by side (typically around a backward call)."""
    b = before.snapshot if isinstance(before, GraphPicture) else before
    a = after.snapshot if isinstance(after, GraphPicture) else after
    return ComparePicture(b, a, titles)


class Watch:
    """Result of `watch(...)`: displays the before/after pair once the block ends."""

    def __init__(self, roots, names, max_nodes, label):
        self.roots, self.names, self.max_nodes = roots, names, max_nodes
        self.label = label
        self.before = snapshot(*roots, names=names, max_nodes=max_nodes)
        self.after = None
        self.raised = None

    def _finish(self, exc):
        self.raised = exc
        self.after = snapshot(*self.roots, names=self.names, max_nodes=self.max_nodes)
        after = f"after {self.label}" if self.label else "after"
        if exc is not None:
            after += f" (raised {type(exc).__name__})"
        before = f"before {self.label}" if self.label else "before"
        self.picture = ComparePicture(self.before, self.after, (before, after))

    def _repr_mimebundle_(self, include=None, exclude=None):
        if self.after is None:
            return {"text/plain": "watch(...): the block has not finished yet"}
        return self.picture._repr_mimebundle_(include, exclude)

    def __repr__(self):
        return self.picture.text if self.after is not None else "watch(...) in progress"


@contextlib.contextmanager
def watch(*roots, names=None, label=None, max_nodes=300):
    """Snapshot the graph, run the block, snapshot again; show both side by side.

    An exception in the block is re-raised after the 'after' picture is taken,
    so a cell that fails live still leaves its pictures behind in `w`.
    """
    w = Watch(roots, names, max_nodes, label)
    try:
        yield w
    except BaseException as exc:
        w._finish(exc)
        raise
    w._finish(None)
