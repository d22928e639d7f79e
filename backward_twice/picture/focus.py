"""focus=: only what feeds the focus is drawn; what lies between it and the roots is one dashed
box, '14 nodes from h to loss'."""
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
    scene.edges.extend(Edge(nid, "above", style="dotted") for nid in above.into)
