"""Chains of ops that saved no tensor (a module's views, transposes, scalar products between the ops
that hold memory: GPT-2's attention is 35 ops, 9 of which save tensors) drawn as one box each, which
names its ops in order: 'View → Transpose → Expand → View' (dashed: the legend says what it is), or,
when it is the one use of the op before it, after that op's name: 'BmmBackward0  then UnsafeView →
Add (no tensor saved)'. A module drawn by path (focus='h.3.attn') that does not fit op by op is drawn
so, compact (Marks.compact: its ops' settings, such as 'dim = -1', are left out too); the text form
keeps every op and setting.
A module overview of totals only (Marks.totals: a UNet's pools and concats, a GNN's message passing
written in the model's own forward, between its call boxes) draws every run of ops outside the call
boxes so, whether they saved tensors or not, one box each: its ops named, and one line of totals
('2 saved, 24.0 KiB freed') as a call box has: a row per saved tensor would make the picture too tall."""
from __future__ import annotations

import re

from ..snapshot import Snapshot
from .palette import EDGE, OP
from .scene import Box, Cell, Edge, Scene, Span, Table

MIN_CHAIN = 2       # a lone op keeps its own box (unless it is a line of the box before it)
PER_LINE = 4        # op names on one line of a chain's box
THEN_PER_LINE = 5   # on one line after the name of the op a chain is the one use of


def fold(scene: Scene, snap: Snapshot, totals: bool = False) -> int:
    """Fold every chain of op boxes that saved no tensor and named no tensor, each but the first fed
    only by the one before it, each but the last feeding only the next: into the first line of the
    op box before it when the chain is that op's one use ('AddmmBackward0  then View → Split (no
    tensor saved)'),
    else, MIN_CHAIN ops or more, into one box (id 'chain_<first op id>'). Returns how many ops
    were folded."""
    ins: dict[str, list[Edge]] = {}
    outs: dict[str, list[Edge]] = {}
    for e in scene.edges:
        outs.setdefault(e.tail, []).append(e)
        ins.setdefault(e.head, []).append(e)

    def quiet(bid: str) -> bool:
        op = snap.ops.get(bid)
        box = scene.boxes.get(bid)
        return (op is not None and box is not None and box.kind == "op" and not op.produces
                and (totals or not any(s.is_tensor for s in op.saved)))

    def next_in_chain(bid: str) -> str | None:
        out = outs.get(bid, [])
        if len(out) != 1 or out[0].tail_mark is not None:
            return None
        nxt = out[0].head
        if not quiet(nxt) or len(ins.get(nxt, [])) != 1:
            return None
        return None if totals and scene.boxes[nxt].cluster != scene.boxes[bid].cluster else nxt

    chains, taken = [], set()
    for bid in list(scene.boxes):
        if bid in taken or not quiet(bid):
            continue
        before = ins.get(bid, [])
        if len(before) == 1 and quiet(before[0].tail) and next_in_chain(before[0].tail) == bid:
            continue                      # not the first of its chain
        chain = [bid]
        while (nxt := next_in_chain(chain[-1])) is not None and nxt not in taken:
            chain.append(nxt)
        chains.append(chain)
        taken.update(chain)
    for box in scene.boxes.values():      # settings (dim = -1) left to the text form, as a chain's are
        if box.kind == "op" and box.table is not None:
            box.table.rows = [r for r in box.table.rows if not all(c.setting for c in r)]
    to_box, folded = {}, 0
    for chain in chains:
        before = ins.get(chain[0], [])
        pred = before[0].tail if len(before) == 1 and before[0].tail_mark is None else None
        pred_box = scene.boxes.get(pred) if pred is not None else None
        names = [snap.ops[b].name for b in chain]
        if totals:
            cid = f"chain_{chain[0]}"
            scene.add(Box(cid, totals_table(names, snap, chain), "chain", cluster=scene.boxes[chain[0]].cluster))
        elif pred_box is not None and pred_box.kind == "op" and len(outs.get(pred, [])) == 1:
            # what its one user does next, beside its name: no rank, no line of its own
            pred_box.table.rows[0][0].spans += _then(names)
            cid = pred
        elif len(chain) >= MIN_CHAIN:
            cid = f"chain_{chain[0]}"
            scene.add(Box(cid, chain_table(names), "chain", cluster=scene.boxes[chain[0]].cluster))
        else:
            continue
        to_box.update((b, cid) for b in chain)
        for b in chain:
            del scene.boxes[b]
        folded += len(chain)
    if not folded:
        return 0
    scene.moved.update(to_box)
    edges = []
    for e in scene.edges:
        tail, head = to_box.get(e.tail, e.tail), to_box.get(e.head, e.head)
        if tail == head:
            continue                      # inside a chain, or from the box a chain is a line of
        if (tail, head) != (e.tail, e.head):
            e = Edge(tail, head, style=e.style, colour=e.colour, width=e.width, tail_mark=e.tail_mark,
                     mark_colour=e.mark_colour, minlen=e.minlen, via=e.via, origin=e.origin)
        edges.append(e)
    scene.edges = edges
    return folded


def _then(names: list[str]) -> list[Span]:
    """'then View → Split (no tensor saved)', small, after an op's name, on lines of THEN_PER_LINE ops."""
    spans = _arrows(names, "  then ", THEN_PER_LINE) + [Span(" (no tensor saved)", italic=True)]
    return [Span(s.text, size=10, italic=s.italic, br=s.br, br_align=s.br_align) for s in spans]


def _arrows(names: list[str], first: str = "", per_line: int = PER_LINE) -> list[Span]:
    lines = [" \u2192 ".join(short(n) for n in names[i:i + per_line]) for i in range(0, len(names), per_line)]
    spans = [Span(first + lines[0])]
    for line in lines[1:]:
        spans += [Span(br=True), Span("\u2192 " + line)]
    return spans


def short(op_name: str) -> str:
    """'TransposeBackward0' -> 'Transpose'."""
    return re.sub(r"Backward\d*$", "", op_name)


def totals_table(names: list[str], snap: Snapshot, chain: list[str]) -> Table:
    """A run of ops in a module overview of totals: their short names in order (even one op's: the
    width of a UNet's overview is tight) and what they saved, counted as a call box counts it ('5 saved,
    1.8 KiB freed'); nothing saved: the names only. Solid when they saved tensors (the legend's 'ops'),
    dashed when not ('chain')."""
    n = sum(1 for _ in snap.saved_tensors(chain))
    if not n:
        return chain_table(names)
    rows = [[Cell([*_arrows(names), Span(br=True)], bg=OP, size=10, align="LEFT")],
            [Cell([Span(f"{n} saved, {snap.memory(chain).brief(short=True)}")], size=10, align="LEFT")]]
    return Table(rows, cellpadding=3, colour=EDGE)


def chain_table(names: list[str]) -> Table:
    """A chain's own box: its ops' short names in order, in bold, dashed (the legend's 'chain')."""
    return Table([[Cell([*_arrows(names), Span(br=True)], bg=OP, size=10, align="LEFT")]], cellpadding=3,
                 colour=EDGE, style="dashed")
