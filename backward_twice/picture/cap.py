"""The cap: a graph with more nodes than max_nodes is drawn up to it; the rest is one dashed box
("... 1,234 more nodes not drawn") above the nodes where the walk stopped."""
from __future__ import annotations

from ..snapshot import Snapshot
from .palette import CLUSTER
from .scene import Box, Cell, Edge, Scene, Span, Table


def add_more_box(scene: Scene, snap: Snapshot) -> None:
    if not snap.truncated:
        return
    kinds = ", ".join(f"{n} x {k}" for k, n in sorted(snap.hidden_by_type.items(),
                                                      key=lambda kv: (-kv[1], kv[0]))[:4])
    plus = "+" if snap.count_capped else ""
    rows = [[Cell([Span(f"... {snap.hidden_count:,}{plus} more nodes not drawn", bold=True)])],
            [Cell([Span(kinds)], size=10)], [Cell([Span("a larger max_nodes=N draws more")], size=10)]]
    scene.add(Box("more", Table(rows, cellspacing=None, cellpadding=None, colour=CLUSTER, style="dashed"),
                  "more", simple=True))
    # the hidden part is upstream (towards the leaves) of the nodes where the walk stopped
    scene.edges.extend(Edge("more", op_id, style="dotted") for op_id in snap.cut_at)
