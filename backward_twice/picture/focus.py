"""focus=: only what feeds the focus is drawn; what lies between it and the roots is one dashed
box, '14 nodes from h to loss'. A module focused on by path (focus='h.3.attn') is drawn alone: what
comes into it from outside is one dashed box below it, 'input from h.3.ln_1, and 220 nodes before it'."""
from __future__ import annotations

from ..snapshot import Role, Snapshot, fmt_shape
from .palette import CLUSTER, LEAF
from .scene import Box, Cell, Edge, Scene, Span, Table


def add_above_box(scene: Scene, snap: Snapshot) -> None:
    above = snap.above
    if above is None:
        return
    if snap.outside is not None:        # a module drawn by path: two boxes that say the same, a line each
        rows = [[Cell([Span(f"{above.headline()}, not drawn", bold=True)])]]
    else:
        rows = [[Cell([Span(above.headline(), bold=True)])], [Cell([Span(above.kinds(shown=3))], size=10)],
                [Cell([Span("not drawn here, only counted")], size=10)]]
    scene.add(Box("above", Table(rows, cellspacing=None, cellpadding=None, colour=CLUSTER, style="dashed"),
                  "above", simple=True))
    scene.edges.extend(Edge(nid, "above", style="dotted") for nid in above.into if nid in scene.boxes)


def add_outside_box(scene: Scene, snap: Snapshot) -> None:
    """The module's boundary: what comes into it from outside, counted in one box, one line, that
    feeds the ops taking those inputs (Snapshot.outside; the text form says them by type)."""
    out = snap.outside
    if out is None:
        return
    rows = [[Cell([Span(f"{out.headline()}, not drawn", bold=True)])]]     # the text form counts them by type
    scene.add(Box("outside", Table(rows, cellspacing=None, cellpadding=None, colour=CLUSTER, style="dashed"),
                  "outside", simple=True))
    into = [nid for nid in out.into if nid in scene.boxes]
    if not into and "more" in scene.boxes:      # the ops it feeds lie beyond max_nodes: under their box
        into = ["more"]
    scene.edges.extend(Edge("outside", nid, style="dotted") for nid in into)


def compact_params(scene: Scene, snap: Snapshot) -> None:
    """A module drawn by path, compact (Marks.compact): each leaf on one line, a parameter named from
    the module ('conv1.weight (256, 1024, 1, 1) · no grad' in focus='layer3.1'), its .grad only said
    to be there or not (the text form has the values)."""
    within = snap.options.within if snap.options is not None else None
    prefix = f"{within.path}." if within is not None and within.path else ""
    for t in snap.tensors.values():
        box = scene.boxes.get(t.id)
        if box is None or box.kind != "tensor" or t.role is not Role.LEAF:
            continue
        name = t.name[len(prefix):] if prefix and t.name.startswith(prefix) else t.name
        grad = "no grad" if t.grad is None else "grad set"
        spans = [Span(name, size=10, bold=True), Span(f" {fmt_shape(t.shape)} \u00b7 {grad}", size=10)]
        scene.boxes[t.id] = Box(t.id, Table([[Cell(spans)]], bg=LEAF), "param", cluster=box.cluster)
