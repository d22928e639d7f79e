"""Far uses of a shared leaf: a weight used by every step of an unrolled RNN is one box with an
edge to each use, and Graphviz spent seconds to minutes routing those edges across every rank
(RNN, 100 steps: 17 s; tanh(h @ w) x 400: 41 s). A use far below the first one is drawn as a
small reference box next to it instead: no long edges."""
from __future__ import annotations

from ..snapshot import Snapshot, once_per_snapshot
from .scene import Scene
from .snapshot_boxes import is_leaf, ref_box

FAR_RANKS = 2       # a use more than this many ranks below the first use gets a reference box


def op_levels(snap: Snapshot) -> dict[str, int]:
    """Each op's level above the output: 0 for an op nothing uses, else 1 + the highest level
    of the ops using it (the rank Graphviz gives it, counted from the bottom)."""
    users: dict[str, list[str]] = {oid: [] for oid in snap.ops}
    pending = dict.fromkeys(snap.ops, 0)
    for op in snap.ops.values():
        for i in dict.fromkeys(op.inputs):
            if i in snap.ops:
                users[op.id].append(i)
                pending[i] += 1
    level = {oid: 0 for oid, n in pending.items() if n == 0}
    ready = list(level)
    while ready:
        oid = ready.pop()
        for i in users[oid]:
            level[i] = max(level.get(i, 0), level[oid] + 1)
            pending[i] -= 1
            if pending[i] == 0:
                ready.append(i)
    return level


@once_per_snapshot
def far_leaf_uses(snap: Snapshot, far: int = FAR_RANKS) -> set[tuple[str, str]]:
    """(leaf id, op id) edges drawn as reference boxes: a leaf keeps a real edge to its first
    use (the highest op) and to every use within `far` levels of it."""
    uses: dict[str, list[str]] = {}
    for a, b in snap.edges:
        if a in snap.tensors and is_leaf(snap, a) and b in snap.ops:
            uses.setdefault(a, []).append(b)
    far_edges = set()
    levels = None
    for leaf, ops in uses.items():
        if len(ops) < 2:
            continue
        levels = levels or op_levels(snap)
        first = max(levels.get(o, 0) for o in ops)
        far_edges.update((leaf, o) for o in ops if first - levels.get(o, 0) > far)
    return far_edges


def add_refs(scene: Scene, snap: Snapshot) -> None:
    far = far_leaf_uses(snap)
    if not far:
        return
    for e in scene.edges:
        target = e.via or e.head
        if (e.tail, target) in far:
            rid = f"{e.tail}_to_{target}"
            if rid not in scene.boxes:
                box = scene.add(ref_box(rid, snap.tensors[e.tail]))
                box.near = e.head
            e.origin, e.tail = e.tail, rid
