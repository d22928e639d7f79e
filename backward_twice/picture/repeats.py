"""Repeated-block folding: an RNN unrolled 20 steps, or tanh(h @ w) 300 times, is the same block
of ops again and again. Drawn op by op it is thousands of points wide (its text under 2 px at
notebook width), and each use of the shared weight pushes the next block right: a diagonal
staircase. The first block nearest the output is drawn; the identical blocks before it are one
box, 'x19 more of the same block', with what they saved (the text form still lists every op).

A block: the graph's spine (from the output op, always the input with the longest path behind
it) cut every `period` spine ops, with the ops each spine op alone reaches (its side branches).
Blocks are the same when their ops have the same names and saved the same slots in the same
states."""
from __future__ import annotations

import dataclasses
from collections import Counter

from ..snapshot import Snapshot
from .palette import CALL_FILL, CLUSTER
from .scene import Cell, Span, Table

MIN_REPEATS = 4        # fewer identical blocks in a row are drawn as they are
MAX_PERIOD = 12        # the longest block looked for, in spine ops
FOLD_FROM_OPS = 24     # draw() folds a run only when it hides at least this many ops


@dataclasses.dataclass
class Folded:
    snap: Snapshot                # what is left to draw
    boxes: dict                   # {box id: Table}
    box_edges: list               # [(from, to)]
    words: str                    # 'folded: 19 x (AddmmBackward0, ...)', for titles and tests
    count: int                    # blocks folded into the box
    ops_folded: int               # ops inside the box
    block: tuple                  # the ops' names of one block


def _spine(snap: Snapshot) -> list[str]:
    depth: dict[str, int] = {}
    for oid in reversed(list(snap.ops)):          # discovery order runs from the roots: inputs later
        op = snap.ops[oid]
        depth[oid] = 1 + max((depth.get(i, 0) for i in op.inputs if i in snap.ops), default=0)
    users = {i for op in snap.ops.values() for i in op.inputs}
    start = [oid for oid in snap.ops if oid not in users]
    if not start:
        return []
    spine, node = [], max(start, key=lambda o: depth.get(o, 0))
    while node is not None:
        spine.append(node)
        ins = [i for i in snap.ops[node].inputs if i in snap.ops and i not in spine]
        node = max(ins, key=lambda i: depth.get(i, 0)) if ins else None
    return spine


def _owners(snap: Snapshot, spine: list[str]) -> dict[str, list[str]]:
    """{spine op: [it, and the non-spine ops first reached from it]}."""
    on_spine = set(spine)
    claimed = set(on_spine)
    owned = {}
    for s in spine:
        members, stack = [s], [i for i in snap.ops[s].inputs if i in snap.ops]
        while stack:
            n = stack.pop()
            if n in claimed:
                continue
            claimed.add(n)
            members.append(n)
            stack.extend(i for i in snap.ops[n].inputs if i in snap.ops)
        owned[s] = members
    return owned


def _signature(snap: Snapshot, ops: list[str]) -> tuple:
    return tuple(sorted((snap.ops[o].name, tuple((s.slot, s.state.value) for s in snap.ops[o].saved if s.is_tensor))
                        for o in ops))


def best_run(snap: Snapshot):
    """(ops of each block in the longest run of identical blocks, nearest the output first), or None."""
    spine = _spine(snap)
    if len(spine) < MIN_REPEATS:
        return None
    owned = _owners(snap, spine)
    best, best_size = None, 0
    for period in range(1, min(MAX_PERIOD, len(spine) // MIN_REPEATS) + 1):
        for offset in range(period):
            blocks = [[o for s in spine[k:k + period] for o in owned[s]]
                      for k in range(offset, len(spine) - period + 1, period)]
            sigs = [_signature(snap, b) for b in blocks]
            i = 0
            while i < len(blocks):
                j = i
                while j + 1 < len(blocks) and sigs[j + 1] == sigs[i]:
                    j += 1
                size = sum(len(b) for b in blocks[i + 1:j + 1])
                if j - i + 1 >= MIN_REPEATS and size > best_size:
                    best, best_size = blocks[i:j + 1], size
                i = j + 1
    return best


def fold(snap: Snapshot) -> Folded | None:
    """The snapshot with its longest run of identical blocks folded (the first block, nearest the
    output, kept), or None when there is no run of MIN_REPEATS."""
    run = best_run(snap)
    if run is None:
        return None
    gone = {o for block in run[1:] for o in block}
    uses: Counter = Counter(a for a, b in snap.edges if b not in gone)
    for t in snap.tensors.values():        # named tensors made by a folded op, leaves only they use
        if (t.made_by in gone) or (t.made_by is None and not uses[t.id]
                                   and any(a == t.id and b in gone for a, b in snap.edges)):
            gone.add(t.id)
    bid = "repeat1"
    edges, box_edges = [], []
    for a, b in snap.edges:
        if a in gone and b in gone:
            continue
        if a in gone or b in gone:
            if b in gone and a in snap.tensors and a not in gone:
                continue                   # a weight kept for the drawn block: no long edge to the box
            e = (bid if a in gone else a, bid if b in gone else b)
            if e not in box_edges:
                box_edges.append(e)
            continue
        edges.append((a, b))
    block = tuple(snap.ops[o].name for o in run[0])
    count = len(run) - 1
    small = dataclasses.replace(
        snap, ops={k: v for k, v in snap.ops.items() if k not in gone},
        tensors={k: v for k, v in snap.tensors.items() if k not in gone}, edges=edges,
        cut_at=[c for c in snap.cut_at if c not in gone],
        total_nodes=snap.total_nodes - sum(1 for g in gone if g in snap.ops or snap.tensors[g].made_by is None))
    if any(c in gone for c in snap.cut_at):
        small.cut_at.append(bid)
    words = f"folded: {count} x the block ({', '.join(_short_list(block))}), the same ops each"
    return Folded(small, {bid: _box(snap, run[1:], block)}, box_edges, words, count,
                  sum(1 for g in gone if g in snap.ops), block)


def _short_list(names) -> list[str]:
    counts = Counter(names)
    return [f"{n} x{k}" if k > 1 else n for n, k in counts.items()]


def _box(snap: Snapshot, blocks, block_names) -> Table:
    saved = [s for b in blocks for o in b for s in snap.ops[o].saved if s.is_tensor]
    each = len(saved) // len(blocks)
    # a buffer several slots hold (the shared weight) counts once; activations apart; an unknown
    # size never as 0 B (Snapshot.memory)
    # short lines: the box is often the widest thing of its rank (a picture then reads at 11 px)
    rows = [[Cell([Span(f"\u00d7{len(blocks)} more of the block below", bold=True)])],
            [Cell([Span(", ".join(_short_list(block_names)))], size=10)],
            [Cell([Span(f"{each} saved tensors each; all {len(blocks)}, a buffer counted once:")], size=10)],
            [Cell([Span(snap.memory([o for b in blocks for o in b]).brief())], size=10)],
            [Cell([Span("folded to read; the text form lists every op")], size=10)]]
    return Table(rows, cellpadding=3, style="rounded,dashed", colour=CLUSTER, bg=CALL_FILL)
