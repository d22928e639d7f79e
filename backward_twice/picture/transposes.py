"""Folded transposes: nn.Linear computes x @ W.T, so every Linear layer adds a TBackward0 box
between its weight and its AddmmBackward0/MmBackward0 (and a Gram matrix f @ f.t() one between
f's op and the product). The picture folds it into the edge from its input to that op, marked
'.T' beside it (the text form keeps the node)."""
from __future__ import annotations

from ..snapshot import Snapshot, once_per_snapshot
from .scene import Edge, Scene
from .snapshot_boxes import is_leaf

TRANSPOSE = "TBackward0"


@once_per_snapshot
def folded_transposes(snap: Snapshot) -> dict[str, tuple[str, str]]:
    """{TBackward0 id: (input id, user op id)} for each transpose drawn as a marked edge: it saved
    nothing, its one input is a leaf or an op drawn, and its one output edge goes to an op (no
    named tensor, no focus= box of the part above). A transpose of a transpose (w.t().t()) is
    drawn as boxes: folding both would leave each one's edge ending at the other's removed box."""
    outs: dict[str, list[str]] = {}
    for a, b in snap.edges:
        outs.setdefault(a, []).append(b)
    for a in snap.above.into if snap.above is not None else ():
        outs.setdefault(a, []).append("above")
    folded = {}
    for op in snap.ops.values():
        if op.name != TRANSPOSE or op.saved or len(op.inputs) != 1 or op.id in snap.cut_at:
            continue
        (leaf,), users = op.inputs, outs.get(op.id, [])
        # its input may be neither (an op folded into a module call's box, as the double-backward
        # ops of autograd.grad(create_graph=True) are in draw(modules=)): then it stays a box
        drawn = leaf in snap.ops or (leaf in snap.tensors and is_leaf(snap, leaf))
        if drawn and len(users) == 1 and users[0] in snap.ops:
            folded[op.id] = (leaf, users[0])
    return {t: (src, user) for t, (src, user) in folded.items() if src not in folded and user not in folded}


def fold(scene: Scene, snap: Snapshot) -> None:
    folded = folded_transposes(snap)
    if not folded:
        return
    edges = []
    for e in scene.edges:
        if e.head in folded:          # weight -> its transpose: drawn with the transpose's own edge
            continue
        if e.tail in folded:          # transpose -> user: from the weight, marked .T
            src = folded[e.tail][0]      # a weight keeps its TBackward0's rank: above the layer's inputs
            edges.append(Edge(src, e.head, tail_mark=".T", via=e.tail, minlen=None if src in snap.ops else 2))
            continue
        edges.append(e)
    scene.edges = edges
    for t in folded:
        del scene.boxes[t]
