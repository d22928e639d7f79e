"""Which `nn.Module` call made each autograd node: recorded with forward hooks.

    from helpers.modules import record_modules
    with record_modules(model):          # hooks on every submodule, removed at the end
        loss = loss_fn(model(x), y)
    draw(loss, modules=model)            # one cluster per module call, with its saved bytes

`record_modules(model)` also works without `with`: the hooks then stay until
`.remove()`, so every forward pass is recorded (the latest recording of a node wins).

How a node is attributed: a forward pre-hook notes the autograd sequence number reached
when a module call starts (every node gets the next number when it is created); the
forward hook then walks back from the call's outputs over the nodes created since, and
claims those no inner call claimed. Inner calls finish first, so each node belongs to the
innermost module call that made it; the outer ones contain it. Nothing holds a node: the
record is {sequence number: call}, so recording never keeps a graph alive.
"""
from __future__ import annotations

import dataclasses
import re
import weakref
from collections import Counter
from dataclasses import dataclass

import torch

from . import render
from .snapshot import GraphInputError, Role, SavedState, Snapshot, fmt_bytes
from .trace import next_sequence_nr
from .walk import COUNT_LIMIT, snapshot_with_ids


@dataclass(frozen=True)
class Call:
    """One call of one module: its dotted path ('layers.0.self_attn', '' for the model itself),
    its class name, and the how-many-th call of that module it was (0 for the first)."""

    path: str
    kind: str
    index: int = 0
    parent: tuple[str, int] | None = None   # (path, index) of the call it ran inside
    start: int = 0                           # autograd sequence number when it started: call order

    @property
    def label(self) -> str:
        where = self.path or "(model)"
        again = f" call {self.index + 1}" if self.index else ""
        return f"{where}{again}: {self.kind}"

    @property
    def key(self) -> tuple[str, int]:
        return self.path, self.index


_RECORDINGS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _grad_fns(obj, out, depth=0):
    """The grad_fn of every tensor in a module's output (tensors, tuples, lists, dicts)."""
    if isinstance(obj, torch.Tensor):
        fn = obj.grad_fn
        if fn is not None:
            out.append(fn)
    elif depth < 4 and isinstance(obj, (tuple, list)):
        for o in obj:
            _grad_fns(o, out, depth + 1)
    elif depth < 4 and isinstance(obj, dict):
        for o in obj.values():
            _grad_fns(o, out, depth + 1)
    return out


class ModuleRecording:
    """Forward hooks on every submodule of a model; `owner(fn)` says which call made `fn`.

    Use as a context manager (hooks removed on exit) or keep it and call `.remove()`.
    """

    def __init__(self, model: torch.nn.Module):
        if not isinstance(model, torch.nn.Module):
            raise GraphInputError(f"record_modules needs an nn.Module (the model); got a {type(model).__name__}.")
        self.model = model
        self.by_seq: dict = {}        # sequence number -> Call (innermost)
        self.calls: dict = {}         # path -> how many calls so far
        self.kinds: dict = {}         # path -> class name
        self._starts: list = []       # stack of (path, first sequence number) of open calls
        self.first_call: dict = {}    # path -> its first Call (parameters are drawn in it)
        self.call_by_key: dict = {}   # (path, index) -> Call
        self._handles = []
        for path, mod in model.named_modules():
            self.kinds[path] = type(mod).__name__
            self._handles.append(mod.register_forward_pre_hook(self._pre(path)))
            self._handles.append(mod.register_forward_hook(self._post(path), always_call=True))
        _RECORDINGS[model] = self

    def _pre(self, path):
        def hook(module, args):
            if torch.is_grad_enabled():
                self._starts.append((path, next_sequence_nr()))
        return hook

    def _post(self, path):
        def hook(module, args, output):
            if not self._starts or self._starts[-1][0] != path:
                return          # the call started with grad disabled: it made no nodes
            _, start = self._starts.pop()
            index = self.calls.get(path, 0)
            self.calls[path] = index + 1
            # the call it ran inside is still open: its index is how many calls of it finished
            parent = self._starts[-1][0] if self._starts else None
            parent = None if parent is None else (parent, self.calls.get(parent, 0))
            call = Call(path, self.kinds[path], index, parent, start)
            self.first_call.setdefault(path, call)
            self.call_by_key[call.key] = call
            self._claim(call, start, _grad_fns(output, []))
        return hook

    def _claim(self, call, start, fns):
        seen = set()
        stack = list(fns)
        by_seq = self.by_seq
        while stack:
            fn = stack.pop()
            if fn in seen:
                continue
            seen.add(fn)
            seq = fn._sequence_nr()
            if seq < start or type(fn).__name__ == "AccumulateGrad":
                continue            # made before this call started, or a leaf
            by_seq.setdefault(seq, call)
            stack.extend(n for n, _ in fn.next_functions if n is not None)

    def owner(self, fn) -> Call | None:
        """The innermost module call that created the node `fn`, or None."""
        try:
            return self.by_seq.get(fn._sequence_nr())
        except (AttributeError, RuntimeError):
            return None

    def remove(self) -> None:
        for h in self._handles:
            h.remove()
        self._handles.clear()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()
        return False


def record_modules(model: torch.nn.Module) -> ModuleRecording:
    """Start recording which module call makes each autograd node (see the module docstring)."""
    return ModuleRecording(model)


def recording_of(modules) -> ModuleRecording:
    """The recording `draw(..., modules=...)` was given: a ModuleRecording, or a model
    whose forward ran under record_modules(model)."""
    if isinstance(modules, ModuleRecording):
        return modules
    if isinstance(modules, torch.nn.Module):
        rec = _RECORDINGS.get(modules)
        if rec is None:
            raise GraphInputError(
                "draw(..., modules=model) needs to know which module made each node: run the "
                "forward pass inside `with record_modules(model):` (from helpers.modules), "
                "then draw.")
        return rec
    raise GraphInputError(f"modules= takes the model (an nn.Module) whose forward ran under "
                          f"record_modules(model); got a {type(modules).__name__}.")


# --------------------------------------------------------------------------------
# draw(loss, modules=model): the picture grouped by module call
WALK_LIMIT = 5_000        # nodes walked to group and collapse (drawn: max_nodes at most)
CLUSTER_DEPTH = 1          # boxes: the outermost calls, and the blocks (calls with calls inside) in them
MIN_RUN = 3               # blocks in a row before a run is collapsed


@dataclass
class _Group:
    call: Call
    nodes: list = dataclasses.field(default_factory=list)      # node ids it made itself
    children: list = dataclasses.field(default_factory=list)   # Call keys of calls inside it


def _saved_totals(snap: Snapshot, node_ids) -> dict:
    out = {"n": 0, "held": 0, "freed": 0}
    for nid in node_ids:
        op = snap.ops.get(nid)
        for s in (op.saved if op is not None else ()):
            if s.is_tensor:
                out["n"] += 1
                if s.state is SavedState.FREED:
                    out["freed"] += s.nbytes or 0
                elif s.state is SavedState.HELD:
                    out["held"] += s.nbytes or 0
    return out


def _money(t: dict) -> str:
    freed = f", {fmt_bytes(t['freed'])} freed" if t["freed"] else ""
    return f"{t['n']} saved, {fmt_bytes(t['held'])} held{freed}"


def module_groups(snap: Snapshot, ids: dict, rec: ModuleRecording, param_names: dict) -> dict:
    """{Call key: _Group} for every call that made a drawn node (and the calls around them)."""
    groups: dict = {}

    def group(call):
        if call.key not in groups:
            groups[call.key] = _Group(call)
            parent = call.parent
            if parent is not None:
                pcall = rec.call_by_key.get(parent) or Call(parent[0], rec.kinds.get(parent[0], "?"), parent[1])
                group(pcall).children.append(call.key)
        return groups[call.key]

    for fn, nid in ids.items():
        if nid in snap.ops:
            call = rec.owner(fn)
            if call is not None:
                group(call).nodes.append(nid)
    for t in snap.tensors.values():
        if t.role is Role.LEAF and t.name in param_names:      # a parameter: in its module's box
            path = param_names[t.name]
            call = rec.first_call.get(path)
            while call is None and path:          # a module never called itself (MultiheadAttention's
                path = path.rsplit(".", 1)[0] if "." in path else ""   # out_proj): its caller's box
                call = rec.first_call.get(path)
            if call is not None:
                group(call).nodes.append(t.id)
        elif t.made_by is not None:                            # a named tensor: with its op
            owner = next((g for g in groups.values() if t.made_by in g.nodes), None)
            if owner is not None:
                owner.nodes.append(t.id)
    return groups


def _subtree(groups, key) -> list:
    out, stack = [], [key]
    while stack:
        k = stack.pop()
        g = groups.get(k)
        if g is None:
            continue
        out.extend(g.nodes)
        stack.extend(g.children)
    return out


def _signature(snap, groups, key):
    nodes = _subtree(groups, key)
    names = Counter(snap.ops[n].name for n in nodes if n in snap.ops)
    return groups[key].call.kind, tuple(sorted(names.items()))


_INDEXED = re.compile(r"^(.*?)(\d+)$")


def find_runs(snap, groups) -> list:
    """Runs of at least MIN_RUN sibling calls of identical blocks ('layers.0', 'layers.1', ...:
    same class, same ops inside), as lists of Call keys in order."""
    runs = []
    by_parent: dict = {}
    for key, g in groups.items():
        by_parent.setdefault(g.call.parent, []).append(key)
    for siblings in by_parent.values():
        indexed = []
        for key in siblings:
            m = _INDEXED.match(key[0].rsplit(".", 1)[-1]) if key[0] else None
            if m is not None and not m.group(1):
                indexed.append((key[0].rsplit(".", 1)[0] if "." in key[0] else "", int(m.group(2)), key))
        indexed.sort()
        run = []
        for base, i, key in indexed:
            if run and (run[-1][0] == base and run[-1][1] == i - 1
                        and _signature(snap, groups, run[-1][2]) == _signature(snap, groups, key)):
                run.append((base, i, key))
            else:
                if len(run) >= MIN_RUN:
                    runs.append([k for _, _, k in run])
                run = [(base, i, key)]
        if len(run) >= MIN_RUN:
            runs.append([k for _, _, k in run])
    return runs


def _box_label(snap, groups, run) -> str:
    first, last = run[0][0], run[-1][0]
    each = _saved_totals(snap, _subtree(groups, run[0]))["n"]
    total = _saved_totals(snap, [n for k in run for n in _subtree(groups, k)])
    kind = groups[run[0]].call.kind
    freed = f", {fmt_bytes(total['freed'])} freed" if total["freed"] else ""
    return (f'<<TABLE BORDER="1" CELLBORDER="0" CELLSPACING="0" CELLPADDING="3" STYLE="rounded,dashed" '
            f'COLOR="{render.CLUSTER}" BGCOLOR="#f4f6f8">'
            f"<TR><TD><B>&#215;{len(run)} {render.esc(kind)}</B></TD></TR>"
            f'<TR><TD><FONT POINT-SIZE="10">{render.esc(first)} &#8230; {render.esc(last)}, '
            f"the same ops each</FONT></TD></TR>"
            f'<TR><TD><FONT POINT-SIZE="10">{each} saved tensors each, {fmt_bytes(total["held"])} held'
            f"{freed}</FONT></TD></TR></TABLE>>")


def collapse(snap: Snapshot, groups: dict, max_nodes: int, keep_first: bool = True):
    """(smaller snapshot, {box id: label}, box edges, {box id: parent Call key}, runs collapsed):
    the longest runs of identical blocks collapsed, all but their first block (every block with
    keep_first=False), into one box each, until at most `max_nodes` nodes are drawn (or nothing
    more can be collapsed)."""
    drawn = len(snap.ops) + len(snap.tensors)
    gone: dict = {}             # node id -> box id
    boxes, parents, done = {}, {}, []
    for run in sorted(find_runs(snap, groups), key=len, reverse=True):
        if drawn <= max_nodes:
            break
        rest = run[1:] if keep_first else run
        bid = f"run{len(boxes) + 1}"
        boxes[bid] = _box_label(snap, groups, rest)
        parents[bid] = groups[run[0]].call.parent
        for key in rest:
            for n in _subtree(groups, key):
                gone[n] = bid
        drawn -= sum(1 for n in gone if gone[n] == bid) - 1
        done.append(rest)
    if not gone:
        return snap, {}, [], {}, []
    edges, box_edges = [], []
    for a, b in snap.edges:
        if a in gone or b in gone:
            e = (gone.get(a, a), gone.get(b, b))
            if e[0] != e[1] and e not in box_edges:
                box_edges.append(e)
        else:
            edges.append((a, b))
    small = dataclasses.replace(
        snap, ops={k: v for k, v in snap.ops.items() if k not in gone},
        tensors={k: v for k, v in snap.tensors.items() if k not in gone}, edges=edges,
        cut_at=[c for c in snap.cut_at if c not in gone])
    return small, boxes, box_edges, parents, done


def grouped_picture(roots, names=None, title=None, max_nodes=300, modules=None):
    """draw(*roots, modules=model): see helpers.graph.draw."""
    from .graph import GraphPicture, describe  # graph imports this module lazily

    rec = recording_of(modules)
    params = {n: p for n, p in rec.model.named_parameters()}
    param_names = {n: n.rsplit(".", 1)[0] if "." in n else "" for n in params}
    names = {**params, **dict(names or {})}
    snap, ids = snapshot_with_ids(*roots, names=names, max_nodes=max(max_nodes, min(WALK_LIMIT, COUNT_LIMIT)))
    groups = module_groups(snap, ids, rec, param_names)
    full = snap
    snap, boxes, box_edges, box_parent, runs = collapse(full, groups, max_nodes)
    if len(snap.ops) + len(snap.tensors) > max_nodes:   # still too big: no block of a run open
        snap, boxes, box_edges, box_parent, runs = collapse(full, groups, max_nodes, keep_first=False)
    if len(snap.ops) + len(snap.tensors) > max_nodes:   # still too big: cut as draw() does
        snap, ids = snapshot_with_ids(*roots, names=names, max_nodes=max_nodes)
        groups = module_groups(snap, ids, rec, param_names)
        full, boxes, box_edges, box_parent, runs = snap, {}, [], {}, []
    del ids
    of, clusters = {}, {}
    depth = _depths(groups)
    boxed = {k for k in groups if depth[k] == 0 or (depth[k] <= CLUSTER_DEPTH and groups[k].children)}
    for key, g in sorted(groups.items(), key=lambda kv: kv[1].call.start):   # in call order
        if key not in boxed:       # a layer inside a block is drawn in the block's box: small boxes
            continue               # side by side make a staircase twice as wide (the text lists them)
        totals = _saved_totals(full, _subtree(groups, key))    # collapsed blocks included
        label = (f"<<B>{render.esc(g.call.label)}</B><BR/><FONT POINT-SIZE=\"10\">"
                 f"{render.esc(_money(totals))}</FONT>>")
        clusters[key] = (g.call.parent, label)
    for key, g in groups.items():
        target = key
        while target not in boxed:
            target = groups[target].call.parent
        for n in g.nodes:
            of[n] = target
    for bid, parent in box_parent.items():
        of[bid] = parent
    # parents first, so a cluster's parent exists when it is listed
    clusters = {k: (p if p in clusters else None, lab) for k, (p, lab) in clusters.items()}
    grouping = render.Grouping(of={n: str(k) for n, k in of.items() if k is not None},
                               clusters={str(k): (None if p is None else str(p), lab)
                                         for k, (p, lab) in clusters.items()},
                               boxes=boxes, box_edges=box_edges,
                               params=frozenset(t.id for t in snap.tensors.values()
                                                if t.role is Role.LEAF and t.name in param_names
                                                and t.id in of))
    text = module_table(full, groups, runs) + "\n" + describe(full)
    return GraphPicture(snap, title, grouping=grouping, text=text)


def _depths(groups) -> dict:
    out = {}
    for key in groups:
        d, p = 0, groups[key].call.parent
        while p is not None and p in groups:
            d, p = d + 1, groups[p].call.parent
        out[key] = d
    return out


def module_table(snap: Snapshot, groups: dict, runs: list) -> str:
    """Text form: one line per module call, saved tensors and bytes of everything inside it."""
    lines = ["by module call (saved tensors of the nodes made inside it):"]

    def walk(keys, d):
        for key in sorted(keys, key=lambda k: groups[k].call.start):
            t = _saved_totals(snap, _subtree(groups, key))
            lines.append(f"{'  ' * d}{groups[key].call.label}: {_money(t)}")
            walk(groups[key].children, d + 1)

    walk([k for k, g in groups.items() if g.call.parent not in groups], 0)
    for run in runs:
        lines.append(f"collapsed in the picture: {len(run)} x {groups[run[0]].call.kind} "
                     f"({run[0][0]} ... {run[-1][0]}), the same ops each")
    return "\n".join(lines)
