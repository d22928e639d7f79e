"""The changed region: an after view too tall for a core path (issue 20 §4) draws only what the
call changed (Marks.spotlight: the nodes it ran, freed or modified, the .grads it changed) and the
boxes one edge away from them (faded, for context: who still holds what). Every other box is
folded into one dashed box that counts them by type; the text form keeps the whole graph."""
from __future__ import annotations

from collections import Counter

from ..snapshot import Snapshot
from .marks import Marks
from .palette import CLUSTER
from .scene import Box, Cell, Edge, Scene, Span, Table

REGION = "unchanged"      # the id of the dashed box
_DRAWN_KINDS = ("op", "tensor", "param", "ref")


def keep_region(scene: Scene, snap: Snapshot, marks: Marks) -> int:
    """Fold every box more than one edge away from the spotlight into one dashed box; returns
    how many nodes were folded (0: nothing to fold, the scene is unchanged)."""
    if not marks.spotlight:
        return 0
    spot = {b for b in scene.boxes if b in marks.spotlight}
    keep = set(spot)
    for e in scene.edges:
        a, b = e.tail, e.head     # a reference box is a node of its own: a shared weight's far uses stay far
        if a in spot:
            keep.add(b)
        if b in spot:
            keep.add(a)
    gone = [bid for bid, box in scene.boxes.items()
            if box.kind in _DRAWN_KINDS and bid not in keep]
    if not gone:
        return 0
    counted = Counter(_type(snap, bid) for bid in gone if scene.boxes[bid].kind != "ref")
    n = sum(counted.values())
    gone_set = set(gone)
    edges, into, out_of = [], set(), set()
    for e in scene.edges:
        t_gone, h_gone = e.tail in gone_set, e.head in gone_set
        if t_gone and h_gone:
            continue
        if t_gone:
            into.add(e.head)          # a folded node feeds a drawn one: the box sits above it
        elif h_gone:
            out_of.add(e.tail)        # a drawn node feeds a folded one: the box sits below it
        else:
            edges.append(e)
    for bid in gone:
        del scene.boxes[bid]
    kinds = ", ".join(f"{k} x {name}" for name, k in sorted(counted.items(), key=lambda kv: (-kv[1], kv[0]))[:3])
    rows = [[Cell([Span(f"{n:,} unchanged node{'s' if n != 1 else ''} not drawn", bold=True)])],
            [Cell([Span(kinds)], size=10)], [Cell([Span("the full pair below draws them")], size=10)]]
    scene.add(Box(REGION, Table(rows, cellspacing=None, cellpadding=None, colour=CLUSTER, style="dashed"),
                  "region", simple=True))
    edges += [Edge(REGION, h, style="dotted") for h in sorted(into)]
    edges += [Edge(t, REGION, style="dotted") for t in sorted(out_of)]
    scene.edges = edges
    return n


def _type(snap: Snapshot, nid: str) -> str:
    if nid in snap.ops:
        return snap.ops[nid].name
    t = snap.tensors.get(nid)
    return "leaf" if t is not None and t.role.value == "leaf" else "named tensor"
