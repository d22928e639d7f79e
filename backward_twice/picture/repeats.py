"""Repeated-block folding (issue 28 §1, torchview's `roll`): an RNN unrolled 20 steps, a sampler's
2,000 steps, the bottlenecks of a ResNet stage, a stack of identical layers are the same block of
ops again and again. Drawn op by op they are thousands of points wide or tall; folded, the block
nearest the output is drawn in full and the identical blocks before it are one box, 'x19 more of
the block below', with what they saved, hold and freed (the text form still lists every op).

Found in one pass, linear in the graph:
1. the spine: from the output op, always the input with the longest path behind it;
2. each spine op owns the ops only it reaches first (its side branches);
3. each spine op gets a token: the hashed canonical signature of what it owns, op by op: the op's
   name, the shapes, dtypes and states of what it saved, and where each input comes from, relative
   to it (this block, a spine op k ops further, a leaf of this shape), so "connected the same way";
4. the gaps between two occurrences of the same token give the few candidate periods; for each,
   one scan finds the stretches where token[k] == token[k + period]: runs of identical blocks.
The runs that hide the most ops are folded, without overlap. Two blocks that differ in one saved
shape (a UNet's stages, a ResNet stage's first bottleneck) have different tokens: never folded."""
from __future__ import annotations

import dataclasses
from collections import Counter

from ..snapshot import Op, Snapshot
from .marks import Grouping
from .palette import CALL_FILL, CLUSTER
from .scene import Cell, Span, Table

MIN_REPEATS = 2        # a block and at least one more like it
MIN_HIDDEN_OPS = 8     # a run is folded when it hides at least this many ops
FOLD_FROM_OPS = 24     # draw() folds eagerly (before trying the full picture) from this many hidden ops,
EAGER_BLOCKS = 4       # in a run of at least this many blocks (else only when the picture does not fit)
CANDIDATE_PERIODS = 8  # the most frequent gaps between equal tokens tried as block lengths


@dataclasses.dataclass
class Run:
    """One run of identical blocks: `blocks[0]` is the block drawn (nearest the output), the rest fold."""

    blocks: list                  # [[op id, ...], ...], nearest the output first
    box: str                      # the box id the folded blocks become
    beside: bool = False          # True: side branches of one op (one above the other: False)
    names: tuple = ()             # the op names of one block (filled by fold)

    @property
    def folded_ops(self) -> int:
        return sum(len(b) for b in self.blocks[1:])


@dataclasses.dataclass
class Folded:
    snap: Snapshot                # what is left to draw
    boxes: dict                   # {box id: Table}
    box_edges: list               # [(from, to)]
    words: str                    # 'folded: 19 x the block (AddmmBackward0, ...)', for titles and tests
    count: int                    # blocks folded into the boxes (all runs)
    ops_folded: int               # ops inside the boxes
    block: tuple                  # the ops' names of the largest run's block
    runs: list = dataclasses.field(default_factory=list)   # [Run], largest first
    inside: dict = dataclasses.field(default_factory=dict)  # {box id: Counter of what it holds: op names, 'leaf'}

    @property
    def eager(self) -> bool:
        """Folded before the whole picture is tried: a long run (an unrolled loop), many ops hidden."""
        return self.ops_folded >= FOLD_FROM_OPS and max(len(r.blocks) for r in self.runs) >= EAGER_BLOCKS

    @property
    def grouping(self) -> Grouping:
        return Grouping(of={}, clusters={}, boxes=self.boxes, box_edges=self.box_edges)

    def title(self, title=None) -> str:
        """The picture's title: what was folded, and where every op is (short: a title wider than
        the graph makes its text small)."""
        n = sum(len(r.blocks) - 1 for r in self.runs)
        what = f"\u00d7{n} identical block{'s' * (n != 1)} folded"
        return f"{title}; {what}" if title else f"{what} (print(pic) lists every op; draw(expand=True) draws them)"


def _spine(snap: Snapshot) -> list[str]:
    depth = _depths(snap)
    users = {i for op in snap.ops.values() for i in op.inputs}
    start = [oid for oid in snap.ops if oid not in users]
    if not start:
        return []
    spine, seen = [], set()
    node = max(start, key=lambda o: depth.get(o, 0))
    while node is not None:
        spine.append(node)
        seen.add(node)
        ins = [i for i in snap.ops[node].inputs if i in snap.ops and i not in seen]
        node = max(ins, key=lambda i: depth.get(i, 0)) if ins else None
    return spine


def _depths(snap: Snapshot) -> dict[str, int]:
    """{op id: ops on the longest path from it to a leaf}, inputs first (an iterative depth-first
    walk: discovery order is not a topological order when a node has several users)."""
    depth: dict[str, int] = {}
    for root in snap.ops:
        if root in depth:
            continue
        stack = [(root, False)]
        while stack:
            oid, done = stack.pop()
            if done:
                depth[oid] = 1 + max((depth[i] for i in snap.ops[oid].inputs if i in depth), default=0)
            elif oid not in depth:
                depth[oid] = 0           # on the stack (a cycle cannot happen: the graph is a DAG)
                stack.append((oid, True))
                stack.extend((i, False) for i in snap.ops[oid].inputs if i in snap.ops and i not in depth)
    return depth


def _owners(snap: Snapshot, spine: list[str]) -> tuple[dict[str, list[str]], dict[str, list[list[str]]]]:
    """({spine op: [it, and the non-spine ops first reached from it]}, {spine op: those ops split
    by the input they were reached through (its side branches)})."""
    claimed = set(spine)
    owned, branches = {}, {}
    for s in spine:
        members, split = [s], []
        for first in reversed([i for i in snap.ops[s].inputs if i in snap.ops]):
            branch, stack = [], [first]
            while stack:
                n = stack.pop()
                if n in claimed:
                    continue
                claimed.add(n)
                branch.append(n)
                stack.extend(i for i in snap.ops[n].inputs if i in snap.ops)
            if branch:
                members.extend(branch)
                split.append(branch)
        owned[s], branches[s] = members, split
    return owned, branches


def op_signature(op: Op) -> tuple:
    """What makes two ops the same op: the name, and what it saved (shapes, dtypes and states of
    tensors; only the slot of a value: a step's index or a constant may differ)."""
    return (op.name, tuple((s.slot, s.shape, s.dtype, s.state.value) if s.is_tensor else (s.slot,)
                           for s in op.saved))


def _tokens(snap: Snapshot, spine: list[str], owned: dict) -> list[int]:
    """One small int per spine op: equal when what it owns is the same ops, saving the same
    shapes, connected the same way (inputs named relative to it)."""
    pos = {s: k for k, s in enumerate(spine)}
    where = {}                       # op id -> (spine index of its owner, index in the owner's list)
    for k, s in enumerate(spine):
        for j, o in enumerate(owned[s]):
            where[o] = (k, j)
    intern: dict[tuple, int] = {}
    out = []
    for k, s in enumerate(spine):
        parts = []
        for o in owned[s]:
            op = snap.ops[o]
            ins = []
            for i in op.inputs:
                if i in where:
                    ok, oj = where[i]
                    # in this spine op's part, or the next spine op: where it is; another op (a
                    # value computed once and shared by every step, a skip): what it is
                    ins.append(("op", oj) if ok == k else ("next",) if (ok, oj) == (k + 1, 0)
                               else ("shared", op_signature(snap.ops[i])))
                else:
                    t = snap.tensors.get(i)
                    ins.append(("leaf", t.shape, t.dtype) if t is not None else ("?",))
            parts.append((op_signature(op), tuple(ins), pos.get(o) is not None))
        out.append(intern.setdefault(tuple(parts), len(intern)))
    return out


def _periods(tokens: list[int]) -> list[int]:
    """The candidate block lengths: the most frequent gaps between two occurrences of one token."""
    last: dict[int, int] = {}
    gaps: Counter = Counter()
    for k, t in enumerate(tokens):
        if t in last:
            gaps[k - last[t]] += 1
        last[t] = k
    return [p for p, _ in sorted(gaps.items(), key=lambda kv: (-kv[1] * kv[0], kv[0]))[:CANDIDATE_PERIODS]]


def find_runs(snap: Snapshot) -> list[Run]:
    """The runs of identical blocks to fold, the one hiding most ops first, none overlapping."""
    spine = _spine(snap)
    if len(spine) < 2:
        return []
    owned, branches = _owners(snap, spine)
    tokens = _tokens(snap, spine, owned)
    size = [len(owned[s]) for s in spine]
    found = []                       # (ops hidden, period, start, blocks)
    n = len(tokens)
    for p in _periods(tokens):
        k = 0
        while k + p < n:
            if tokens[k] != tokens[k + p]:
                k += 1
                continue
            j = k
            while j + p < n and tokens[j] == tokens[j + p]:
                j += 1
            blocks = (j - k) // p + 1
            if blocks >= MIN_REPEATS:
                hidden = sum(size[k + p:k + blocks * p])
                found.append((hidden, p, k, blocks))
            k = j + 1
    taken = [False] * n
    runs = []
    for _, p, k, blocks in sorted(found, key=lambda r: (-r[0], r[1], r[2])):
        while blocks and any(taken[k:k + p]):              # blocks another run took: left out
            k, blocks = k + p, blocks - 1
        while blocks and any(taken[k + (blocks - 1) * p:k + blocks * p]):
            blocks -= 1
        if blocks < MIN_REPEATS or sum(size[k + p:k + blocks * p]) < MIN_HIDDEN_OPS:
            continue
        for i in range(k, k + blocks * p):
            taken[i] = True
        runs.append(Run([[o for s in spine[k + b * p:k + (b + 1) * p] for o in owned[s]] for b in range(blocks)],
                        f"repeat{len(runs) + 1}"))
    folded = {o for r in runs for b in r.blocks[1:] for o in b}
    for s in spine:                  # identical side branches of one op (a stack of per-step outputs)
        if s in folded or len(branches[s]) <= MIN_REPEATS:
            continue
        alike: dict[tuple, list] = {}
        for branch in branches[s]:
            alike.setdefault(_branch_signature(snap, branch), []).append(branch)
        for same in alike.values():
            if len(same) >= MIN_REPEATS and sum(len(b) for b in same[1:]) >= MIN_HIDDEN_OPS:
                runs.append(Run(same, f"repeat{len(runs) + 1}", beside=True))
    return runs


def _branch_signature(snap: Snapshot, branch: list[str]) -> tuple:
    """What a side branch is: its ops (op_signature), each input where it is in the branch, else
    what it is (a spine op, a shared value, a leaf of this shape)."""
    at = {o: j for j, o in enumerate(branch)}
    out = []
    for o in branch:
        op = snap.ops[o]
        ins = []
        for i in op.inputs:
            t = snap.tensors.get(i)
            ins.append(("op", at[i]) if i in at else op_signature(snap.ops[i]) if i in snap.ops
                       else ("leaf", t.shape, t.dtype) if t is not None else ("?",))
        out.append((op_signature(op), tuple(ins)))
    return tuple(out)


def best_run(snap: Snapshot):
    """The blocks of the run that hides most ops (nearest the output first), or None."""
    runs = find_runs(snap)
    return runs[0].blocks if runs else None


def fold(snap: Snapshot, runs: list[Run] | None = None) -> Folded | None:
    """The snapshot with its runs of identical blocks folded (each run's first block, nearest the
    output, kept), or None when there is none. runs: those to fold (find_runs of another snapshot of
    the same graph: a pair folds both halves alike); ops `snap` does not have are left out."""
    runs = find_runs(snap) if runs is None else [
        Run([[o for o in b if o in snap.ops] for b in r.blocks], r.box, r.beside) for r in runs]
    runs = [r for r in runs if r.folded_ops]
    if not runs:
        return None
    gone: dict[str, str] = {o: r.box for r in runs for block in r.blocks[1:] for o in block}
    uses: Counter = Counter(a for a, b in snap.edges if b not in gone)
    for t in snap.tensors.values():        # named tensors made by a folded op, leaves only folded ops use
        if t.made_by in gone:
            gone[t.id] = gone[t.made_by]
        elif t.made_by is None and not uses[t.id]:
            users = {gone[b] for a, b in snap.edges if a == t.id and b in gone}
            if users:
                gone[t.id] = min(users)
    edges, box_edges = [], []
    for a, b in snap.edges:
        ga, gb = gone.get(a), gone.get(b)
        if ga is None and gb is None:
            edges.append((a, b))
            continue
        if ga is not None and ga == gb:
            continue
        if gb is not None and ga is None and a in snap.tensors:
            continue                       # a weight kept for the drawn block: no long edge to the box
        e = (ga or a, gb or b)
        if e not in box_edges:
            box_edges.append(e)
    removed_nodes = sum(1 for g in gone if g in snap.ops or snap.tensors[g].made_by is None)
    small = dataclasses.replace(
        snap, ops={k: v for k, v in snap.ops.items() if k not in gone},
        tensors={k: v for k, v in snap.tensors.items() if k not in gone}, edges=edges,
        cut_at=list(dict.fromkeys(gone.get(c, c) for c in snap.cut_at)),
        total_nodes=snap.total_nodes - removed_nodes)
    big = max(runs, key=lambda r: r.folded_ops)
    block = tuple(snap.ops[o].name for o in big.blocks[0])
    for r in runs:
        r.names = tuple(snap.ops[o].name for o in r.blocks[0])
    words = _words(runs)
    boxes = {r.box: _box(snap, r) for r in runs}
    inside: dict[str, Counter] = {r.box: Counter() for r in runs}
    for g, box in gone.items():
        if g in snap.ops or snap.tensors[g].made_by is None:
            inside[box]["leaf" if g in snap.tensors else snap.ops[g].name] += 1
    return Folded(small, boxes, box_edges, words, sum(len(r.blocks) - 1 for r in runs),
                  sum(r.folded_ops for r in runs), block, runs, inside)


def _words(runs: list[Run]) -> str:
    return "folded: " + "; ".join(f"{len(r.blocks) - 1} x the block ({', '.join(_short_list(r.names))})"
                                  for r in runs) + ", the same ops each"


def cut(folded: Folded, max_nodes: int) -> Folded:
    """The folded picture drawn up to `max_nodes` ops and leaves (picture.cap.cut: the nodes nearest
    the output, the rest counted in one box); a fold box none of whose neighbours is drawn goes too,
    counted with the rest."""
    from . import cap
    small = cap.cut(folded.snap, max_nodes)
    return folded if small is folded.snap else _without(folded, small)


def cut_beyond(folded: Folded) -> Folded | None:
    """The folded picture without what lies beyond its boxes (the ops that feed the folded blocks:
    an RNN's first step, a network's stem, the stages before the last), counted in one box: the
    output, the block nearest it and its xN box. None when nothing lies beyond."""
    snap = folded.snap
    feeding = {a for a, b in folded.box_edges if b in folded.boxes and a in snap.ops}
    beyond = {n for n in snap.under(feeding) if n in snap.ops}
    if not beyond:
        return None
    leaves = {t.id for t in snap.tensors.values() if t.made_by is None}
    used = {a for a, b in snap.edges if b in snap.ops and b not in beyond}
    keep = {o for o in snap.ops if o not in beyond} | {t for t in leaves if t in used}
    tensors = {k: t for k, t in snap.tensors.items() if k in keep or (t.made_by is not None and t.made_by in keep)}
    hidden = Counter(snap.hidden_by_type)
    hidden.update(snap.ops[o].name for o in beyond)
    hidden.update("leaf" for t in leaves if t not in keep)
    cut_at = [o for o in snap.ops if o in keep and any(i in beyond for i in snap.ops[o].inputs)]
    small = dataclasses.replace(
        snap, ops={k: v for k, v in snap.ops.items() if k in keep}, tensors=tensors,
        edges=[(a, b) for a, b in snap.edges if (a in keep or a in tensors) and (b in keep or b in tensors)],
        truncated=True, hidden_by_type=hidden,
        cut_at=list(dict.fromkeys([*(c for c in snap.cut_at if c in keep or c in folded.boxes), *cut_at])))
    return _without(folded, small)


def _without(folded: Folded, small: Snapshot) -> Folded:
    """`folded` with its snapshot cut to `small`: a box whose block (the one drawn) is still drawn
    stays (fed by ops beyond the cut, it gets the 'more' box's dotted edge); the others are counted
    with the rest ('xN more of the block below' always has its block below)."""
    here = set(small.ops) | set(small.tensors)
    gone = set(folded.snap.ops) - set(small.ops)
    keep = {r.box for r in folded.runs if any(o in here for o in r.blocks[0])}    # its block drawn
    edges = [(a, b) for a, b in folded.box_edges if (a in keep or a in here) and (b in keep or b in here)]
    cut_at = list(small.cut_at)
    hidden = Counter(small.hidden_by_type)
    total = small.total_nodes
    for b in folded.boxes:
        if b not in keep:
            hidden.update(folded.inside.get(b, {}))
            total += sum(folded.inside.get(b, {}).values())
        elif any(e[1] == b and (e[0] in gone or (e[0] in folded.boxes and e[0] not in keep))
                 for e in folded.box_edges) and b not in cut_at:
            cut_at.append(b)
    cut_at = [c for c in cut_at if c in here or c in keep]
    small = dataclasses.replace(small, cut_at=cut_at, hidden_by_type=hidden, total_nodes=total, truncated=True)
    runs = [r for r in folded.runs if r.box in keep]
    return dataclasses.replace(folded, snap=small, boxes={b: t for b, t in folded.boxes.items() if b in keep},
                               box_edges=edges, runs=runs, words=_words(runs) if runs else "")


def _short_list(names) -> list[str]:
    counts = Counter(names)
    return [f"{n} x{k}" if k > 1 else n for n, k in counts.items()]


def _lines(items, width=40, most=None) -> list[str]:
    """Items joined by commas, in lines of about `width` characters (a box no wider than it needs);
    most: at most this many lines, the last ending '...' when items were left out."""
    lines = [""]
    for item in items:
        if lines[-1] and len(lines[-1]) + len(item) + 2 > width:
            lines[-1] += ","
            lines.append("")
        lines[-1] += (", " if lines[-1] else "") + item
    if most is not None and len(lines) > most:
        lines = [*lines[:most - 1], lines[most - 1].rstrip(",") + ", \u2026"]
    return lines


def _box(snap: Snapshot, run: Run) -> Table:
    blocks = run.blocks[1:]
    block_names = [snap.ops[o].name for o in run.blocks[0]]
    saved = [s for b in blocks for o in b for s in snap.ops[o].saved if s.is_tensor]
    each = len(saved) // len(blocks)
    # a buffer several slots hold (the shared weight) counts once; activations apart; an unknown
    # size never as 0 B (Snapshot.memory)
    # short lines: the box is often the widest thing of its rank (a picture then reads at 11 px)
    head = f"\u00d7{len(blocks)} more like the branch beside" if run.beside else f"\u00d7{len(blocks)} more of the block below"
    rows = [[Cell([Span(head, bold=True)])],
            *([Cell([Span(line)], size=10)] for line in _lines(_short_list(block_names), most=2)),
            [Cell([Span(f"{each} saved tensors each; all {len(blocks)}, a buffer counted once:")], size=10)],
            [Cell([Span(snap.memory([o for b in blocks for o in b]).brief())], size=10)]]
    return Table(rows, cellpadding=3, style="rounded,dashed", colour=CLUSTER, bg=CALL_FILL)
