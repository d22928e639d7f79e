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


def cut(snap: Snapshot, max_nodes: int) -> Snapshot:
    """`snap` drawn up to `max_nodes` ops and leaves, as walk.snapshot(max_nodes=) draws a live graph:
    the nodes nearest the roots (discovery order: every prefix of it hangs from the roots), the rest
    counted by type in the 'more' box. Plain data in, plain data out: a picture drawn after backward
    (a pair, an after view) is cut without the live graph."""
    import dataclasses
    from collections import Counter

    if len(snap.ops) + snap.leaf_count <= max_nodes:
        return snap
    feeds: dict[str, list[str]] = {}
    for a, b in snap.edges:
        if b in snap.ops:
            feeds.setdefault(b, []).append(a)
    kept_ops, kept_leaves, n = [], [], 0
    leaves = {t.id for t in snap.tensors.values() if t.made_by is None}
    for oid in snap.ops:
        if n >= max_nodes:
            break
        kept_ops.append(oid)
        n += 1
        for a in feeds.get(oid, ()):
            if a in leaves and a not in kept_leaves and n < max_nodes:
                kept_leaves.append(a)
                n += 1
    keep = set(kept_ops) | set(kept_leaves)
    tensors = {k: t for k, t in snap.tensors.items() if k in keep or (t.made_by is not None and t.made_by in keep)}
    hidden = Counter(snap.hidden_by_type)
    hidden.update(op.name for oid, op in snap.ops.items() if oid not in keep)
    hidden.update("leaf" for t in snap.tensors.values() if t.made_by is None and t.id not in keep)
    cut_at = [oid for oid in kept_ops if any(a not in keep for a in feeds.get(oid, ()) if a in snap.ops or a in leaves)]
    return dataclasses.replace(
        snap, ops={k: v for k, v in snap.ops.items() if k in keep}, tensors=tensors,
        edges=[(a, b) for a, b in snap.edges if (a in keep or a in tensors) and (b in keep or b in tensors)],
        truncated=True, hidden_by_type=hidden, cut_at=list(dict.fromkeys([*(c for c in snap.cut_at if c in keep), *cut_at])))
