"""focus=: only what feeds the focus is drawn; what lies between it and the roots is one dashed
box, '14 nodes from h to loss'. A module focused on by path (focus='h.3.attn') is drawn alone: what
comes into it from outside is one dashed box below it, 'input from h.3.ln_1, and 220 nodes before it'."""
from __future__ import annotations

from ..snapshot import Snapshot
from .palette import CLUSTER
from .scene import Box, Cell, Edge, Scene, Span, Table


def add_above_box(scene: Scene, snap: Snapshot) -> None:
    above = snap.above
    if above is None:
        return
    rows = [[Cell([Span(above.headline(), bold=True)])], [Cell([Span(above.kinds(shown=3))], size=10)],
            [Cell([Span("not drawn here, only counted")], size=10)]]
    scene.add(Box("above", Table(rows, cellspacing=None, cellpadding=None, colour=CLUSTER, style="dashed"),
                  "above", simple=True))
    scene.edges.extend(Edge(nid, "above", style="dotted") for nid in above.into if nid in scene.boxes)


def add_outside_box(scene: Scene, snap: Snapshot) -> None:
    """The module's boundary: what comes into it from outside, counted in one box that feeds the
    ops taking those inputs (Snapshot.outside)."""
    out = snap.outside
    if out is None:
        return
    rows = [[Cell([Span(out.headline(), bold=True)])], [Cell([Span(out.kinds(shown=3))], size=10)],
            [Cell([Span(f"outside {out.scope}: not drawn here, only counted")], size=10)]]
    scene.add(Box("outside", Table(rows, cellspacing=None, cellpadding=None, colour=CLUSTER, style="dashed"),
                  "outside", simple=True))
    scene.edges.extend(Edge("outside", nid, style="dotted") for nid in out.into if nid in scene.boxes)
