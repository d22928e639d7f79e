"""Which `nn.Module` call made each autograd node: recorded with forward hooks.

    from backward_twice.modules import record_modules
    with record_modules(model):          # hooks on every submodule, removed at the end
        loss = loss_fn(model(x), y)
    draw(loss, modules=model)            # one cluster per module call, with its saved bytes
    draw(loss, modules=model, expand=["cat"])   # one box per call, `cat` op by op

A graph that does not read on about two screens at notebook width op by op (a trunk with two
heads is too wide, six transformer layers too tall) is drawn as one box per module call
instead: a row per layer with each tensor it saved, held or FREED (ModulePicture.form says
which picture was drawn; the text form is the same for both).

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
import difflib
import re
import weakref
from collections import Counter
from dataclasses import dataclass

import torch

from . import render
from .picture import repeats
from .picture.alt_text import alt_of
from .picture.figure import FIT_MAX_BOXES, Picture, cannot_fit
from .picture.layout import fits, reads_at, shown_px, smallest_text_px
from .picture.palette import CALL_FILL, DETAILS
from .picture.scene import Cell, Span, Table
from .picture.text_form import describe
from .snapshot import DrawOptions, GraphInputError, Role, SavedState, Snapshot, fmt_bytes, fmt_shape
from .trace import next_sequence_nr
from .walk import COUNT_LIMIT, is_leaf_node, snapshot_with_ids


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
            if seq < start or is_leaf_node(fn):
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
    """Start recording which module call makes each autograd node (see the module docstring).

    Example (run by tests/test_docstrings.py):

        >>> import torch, backward_twice as bt
        >>> model = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.Tanh())
        >>> with bt.record_modules(model):
        ...     loss = model(torch.ones(1, 3)).sum()
        >>> pic = bt.draw(loss, modules=model)     # one box per module call
        >>> print(pic.text.splitlines()[0])
        by module call (saved tensors of the nodes made inside it):
    """
    return ModuleRecording(model)


def recording_covering(roots) -> ModuleRecording | None:
    """A live recording (record_modules) that made the roots' last ops, or None: draw(loss) of a
    recorded model can fall back on its module overview when no op-by-op picture fits."""
    if not _RECORDINGS:
        return None
    try:      # a root whose grad_fn torch refuses to give (a view written in place): the walk says why
        fns = [t.grad_fn for t in roots if isinstance(t, torch.Tensor) and t.grad_fn is not None]
    except RuntimeError:
        return None
    for rec in list(_RECORDINGS.values()):
        seen, stack = 0, list(fns)
        while stack and seen < 50:       # the loss's own ops are made outside the model: look a little deeper
            fn = stack.pop(0)
            seen += 1
            if rec.owner(fn) is not None:
                return rec
            stack.extend(n for n, _ in fn.next_functions if n is not None)
    return None


@dataclass(frozen=True, eq=False)
class ModuleScope:
    """A module focused on by path (draw(loss, focus='h.3.attn')): the calls of that path and of the
    modules inside it. It is DrawOptions.within: the walk follows an op's inputs only into nodes it
    `holds`, the ops those calls made and the leaves they use (parameters, drawn with their names);
    what comes from outside is one counted box, its `source` named. It holds the recording (the
    model), never the graph."""

    path: str                   # as recorded ('h.3.attn'), whatever the spelling given
    calls: frozenset            # the Calls whose ops are inside
    rec: ModuleRecording

    def holds(self, fn) -> bool:
        return is_leaf_node(fn) or self.rec.owner(fn) in self.calls

    def source(self, fn) -> str:
        """Where an input from outside was made: its module call ('h.3.ln_1 (LayerNorm)'), else its op."""
        call = self.rec.owner(fn)
        if call is None:
            return fn.name()
        return f"{call.path or 'the model'}{f' call {call.index + 1}' if call.index else ''} ({call.kind})"


def recorded_path(rec: ModuleRecording, path: str) -> str:
    """`path` as recorded: 'h.3.attn' as given, or after the model's name ('model.h.3.attn', whatever
    the variable is called: a first component that is not a module, the rest a module path). A
    GraphInputError that names close paths and every recorded one when it is neither."""
    if not isinstance(path, str):
        raise GraphInputError(f"focus= takes a tensor or a module path (a str), not {type(path).__name__}.")
    if not path.strip(" ."):
        raise GraphInputError(f"focus={path!r} names no module: draw(loss) draws the whole model; focus= takes "
                              "the path of a module inside it, such as 'h.3.attn'.")
    called = {c.path for c in rec.call_by_key.values()}
    known = set(rec.kinds)
    if path in called:
        return path
    head, _, rest = path.partition(".")
    if rest and head not in known and rest in called:
        return rest
    spellings = (f"A path is written as model.named_modules() names it ('{_example(called)}'), or after "
                 f"the model's name ('model.{_example(called)}').")
    listed = sorted(p for p in called if p)
    shown = ", ".join(listed[:12]) + (", ..." if len(listed) > 12 else "")
    for p in (path, rest):
        if p and p in known:
            raise GraphInputError(f"focus={path!r}: {p!r} is a module of the model, but no call of it made a "
                                  f"node of this graph (it did not run, or ran under no_grad). The recorded "
                                  f"calls: {shown}.")
    close = list(dict.fromkeys(difflib.get_close_matches(path, listed, n=3, cutoff=0.6)
                               + (difflib.get_close_matches(rest, listed, n=3, cutoff=0.6) if rest else [])))
    near = f" Did you mean {' or '.join(repr(c) for c in close[:3])}?" if close else ""
    raise GraphInputError(f"focus={path!r}: no module at that path made a node of this graph.{near} {spellings} "
                          f"The recorded calls: {shown}.")


def _example(called) -> str:
    """A path of the recording for an error message: the longest one of the first calls."""
    paths = sorted((p for p in called if p), key=lambda p: (-p.count("."), p))
    return paths[0] if paths else "0"


def module_focus(roots, rec: ModuleRecording, path: str) -> tuple[list, ModuleScope]:
    """focus='h.3.attn' (or 'model.h.3.attn'): (the nodes that carry the outputs of that module's
    calls, made inside it and used outside it or by no one; its ModuleScope, where the walk stops).
    A GraphInputError names close paths and the recorded ones when `path` made no node (recorded_path)."""
    from .walk import nodes_under
    path = recorded_path(rec, path)
    inside = frozenset(c for c in rec.call_by_key.values() if c.path == path or path == ""
                       or c.path.startswith(path + "."))
    nodes, _ = nodes_under([t.grad_fn for t in roots if isinstance(t, torch.Tensor) and t.grad_fn is not None])
    users: dict = {}
    for fn in nodes:
        for n, _ in fn.next_functions:
            if n is not None:
                users.setdefault(n, []).append(fn)
    mine = [fn for fn in nodes if rec.owner(fn) in inside]
    out = [fn for fn in mine if not users.get(fn) or any(rec.owner(u) not in inside for u in users[fn])]
    if not out:
        raise GraphInputError(f"focus={path!r}: the calls of {path!r} made no node of the graph behind these "
                              "roots (they ran for another output).")
    return out, ModuleScope(path, inside, rec)


def next_focus(full: Snapshot, groups: dict, inside: str | None = None) -> str | None:
    """The module path to drill down into next: the call (below the model's own, or below `inside`,
    the path focused on now) whose ops saved the most bytes that backward frees (activations held,
    or freed and returned: a saved reference to a weight is not), for the text of a picture that
    draws calls as boxes."""
    best, size = None, -1
    for key, g in sorted(groups.items(), key=lambda kv: kv[1].call.start):   # a tie: the first call wins
        path = g.call.path
        if not path or (inside and not path.startswith(inside + ".")):
            continue
        m = full.memory(_subtree(groups, key))
        total = m.activations + m.freed - m.freed_kept     # what backward frees (a weight's reference: not)
        if total > size:
            best, size = g.call.path, total
    return best


def drill_from(roots, names, options, snap: Snapshot, ids: dict) -> str | None:
    """next_focus of a snapshot drawn with a module focus (options.within; walk.snapshot_with_ids: its
    ids), or None when no module call runs inside the one focused on. Drawn up to max_nodes, the
    module is walked whole again for it, so the answer does not depend on the cap."""
    scope = options.within
    if snap.truncated:
        snap, ids = snapshot_with_ids(*roots, names=names, options=dataclasses.replace(options, max_nodes=COUNT_LIMIT))
    return next_focus(snap, module_groups(snap, ids, scope.rec, {}, scope.path), scope.path)


def focus_next_line(path: str, modules: bool = False) -> str:
    """The text form's line that says which module path to focus next (next_focus's)."""
    how = "modules=model, " if modules else ""
    return f"focus next: {path} (the call inside that saved the most: draw(..., {how}focus={path!r}) draws its ops)"


def with_focus_next(words: str, path: str, modules: bool = False) -> str:
    """A text form with focus_next_line added before its closing 'picture: ...' notes (what the
    picture drawn simplified stays the last thing said)."""
    lines = words.split("\n")
    at = len(lines)
    while at > 1 and lines[at - 1].startswith("picture: "):
        at -= 1
    return "\n".join([*lines[:at], focus_next_line(path, modules), *lines[at:]])


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
                "forward pass inside `with record_modules(model):` (from backward_twice.modules), "
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
    """{"n": saved tensor slots, "memory": Snapshot.memory} of the ops among `node_ids` (a
    buffer several of them hold counted once)."""
    ops = list(node_ids)
    return {"n": sum(1 for _ in snap.saved_tensors(ops)), "memory": snap.memory(ops)}


def _money(t: dict, short: bool = False) -> str:
    """'3 saved, 296.0 KiB held (8.0 KiB activations), 1.0 KiB freed' (MemoryTotals.brief; short: its
    short form, for a box of totals only)."""
    return f"{t['n']} saved, {t['memory'].brief(short)}"


def module_groups(snap: Snapshot, ids: dict, rec: ModuleRecording, param_names: dict,
                  scope: str | None = None) -> dict:
    """{Call key: _Group} for every call that made a drawn node (and the calls around them).
    scope: a module path focused on ('h.3.attn'): only calls inside it, its own outermost."""

    def inside(path) -> bool:
        return scope is None or scope == "" or path == scope or path.startswith(scope + ".")

    groups: dict = {}

    def group(call):
        if not inside(call.path):
            return None
        if call.key not in groups:
            if call.parent is not None and not inside(call.parent[0]):
                call = dataclasses.replace(call, parent=None)     # the module focused on: outermost
            groups[call.key] = _Group(call)
            parent = call.parent
            if parent is not None:
                pcall = rec.call_by_key.get(parent) or Call(parent[0], rec.kinds.get(parent[0], "?"), parent[1])
                group(pcall).children.append(call.key)
        return groups[call.key]

    for fn, nid in ids.items():
        if nid in snap.ops:
            call = rec.owner(fn)
            g = None if call is None else group(call)
            if g is not None:
                g.nodes.append(nid)
    for t in snap.tensors.values():
        if t.role is Role.LEAF and t.name in param_names:      # a parameter: in its module's box
            path = param_names[t.name]
            call = rec.first_call.get(path)
            while call is None and path:          # a module never called itself (MultiheadAttention's
                path = path.rsplit(".", 1)[0] if "." in path else ""   # out_proj): its caller's box
                call = rec.first_call.get(path)
            g = None if call is None else group(call)
            if g is not None:
                g.nodes.append(t.id)
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
    """A call's class and its ops (names, and the shapes and dtypes of what they hold): two calls
    fold together only when they are the same block on the same shapes. A freed slot counts by its
    shape where an earlier walk saw it held (watch reads them all before backward on a recorded model),
    else by its slot only."""
    nodes = _subtree(groups, key)
    ops = Counter((snap.ops[n].name, tuple((s.slot, s.shape, s.dtype) if s.state is SavedState.HELD or s.shape
                                           else (s.slot,)
                                           for s in snap.ops[n].saved))
                  for n in nodes if n in snap.ops)
    return groups[key].call.kind, tuple(sorted(ops.items(), key=repr))


_INDEXED = re.compile(r"^(.*?)(\d+)$")


_RUNS_MEMO: list = []     # [(snap, groups, answer)]: the last find_runs, asked again by collapse and the overview


def find_runs(snap, groups) -> list:
    """Runs of at least MIN_RUN sibling calls of identical blocks ('layers.0', 'layers.1', ...:
    same class, same ops inside), as lists of Call keys in order. The last answer is kept (one
    picture asks it several times of the same snapshot and groups)."""
    if _RUNS_MEMO and _RUNS_MEMO[0][0] is snap and _RUNS_MEMO[0][1] is groups and _RUNS_MEMO[0][3] == len(groups):
        return [list(r) for r in _RUNS_MEMO[0][2]]
    runs = _find_runs(snap, groups)
    _RUNS_MEMO[:] = [(snap, groups, [list(r) for r in runs], len(groups))]
    return runs


def _find_runs(snap, groups) -> list:
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


def _box_label(snap, groups, run) -> Table:
    first, last = run[0][0], run[-1][0]
    each = _saved_totals(snap, _subtree(groups, run[0]))["n"]
    total = _saved_totals(snap, [n for k in run for n in _subtree(groups, k)])
    kind = groups[run[0]].call.kind
    rows = [[Cell([Span(f"\u00d7{len(run)} {kind}", bold=True)])],
            [Cell([Span(f"{first} \u2026 {last}, the same ops each")], size=10)],
            [Cell([Span(f"{each} saved tensors each, " + total["memory"].brief())], size=10)]]
    return Table(rows, cellpadding=3, style="rounded,dashed", colour=render.CLUSTER, bg=CALL_FILL)


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
        cut_at=[c for c in snap.cut_at if c not in gone], **_focus_boxes_into(snap, gone))
    return small, boxes, box_edges, parents, done


def grouped_picture(roots, names=None, title=None, max_nodes=300, modules=None, expand=None, focus=None,
                    options=None):
    """draw(*roots, modules=model): see backward_twice.graph.draw. With focus=, the module calls are
    made of the part of the graph under the focus (what lies above it is one counted box)."""
    rec = recording_of(modules)
    within = None if options is None else options.within
    if isinstance(focus, str):            # a module path: the nodes that carry its calls' outputs, its scope
        focus, within = module_focus(roots, rec, focus)
    focus_path = None if within is None else within.path
    known = {name for name, _ in rec.model.named_modules()}
    params = {n: p for n, p in rec.model.named_parameters()}
    param_names = {n: n.rsplit(".", 1)[0] if "." in n else "" for n in params}
    names = {**params, **dict(names or {})}
    hide = options is not None and options.hide_params     # draw()'s DrawOptions: its other options are the arguments
    walked = DrawOptions(max_nodes=max(max_nodes, min(WALK_LIMIT, COUNT_LIMIT)), focus=focus, hide_params=hide,
                         within=within)
    snap, ids = snapshot_with_ids(*roots, names=names, options=walked)
    groups = module_groups(snap, ids, rec, param_names, focus_path)
    full = snap
    snap, boxes, box_edges, box_parent, runs = collapse(full, groups, max_nodes)
    if len(snap.ops) + len(snap.tensors) > max_nodes:   # still too big: no block of a run open
        snap, boxes, box_edges, box_parent, runs = collapse(full, groups, max_nodes, keep_first=False)
    walked_full, walked_groups = full, groups      # the overview's boxes: every call walked, whatever max_nodes
    if len(snap.ops) + len(snap.tensors) > max_nodes:   # still too big op by op: cut as draw() does
        snap, ids = snapshot_with_ids(*roots, names=names, options=dataclasses.replace(walked, max_nodes=max_nodes))
        groups = module_groups(snap, ids, rec, param_names, focus_path)
        full, boxes, box_edges, box_parent, runs = snap, {}, [], {}, []
    del ids
    runs_drawn = Collapsed(snap, boxes, box_edges, box_parent)
    text = ((f"{title}\n" if title else "") + module_table(walked_full, walked_groups, runs) + "\n"
            + describe(full))
    detail = None if expand not in (None, True) else render.to_dot(
        snap, title, grouping=_detail_grouping(full, groups, runs_drawn, param_names))
    ops_full = full                 # what the op-by-op pictures draw (cut to max_nodes, or not)
    if walked_full is not full:     # the op-by-op picture was cut: the overview boxes the walked graph
        full, groups = walked_full, walked_groups
        runs_drawn = Collapsed(full, {}, [], {})
    owned = {n for g in groups.values() for n in g.nodes}
    outside = sum(1 for n in [*full.ops, *full.tensors] if n not in owned)
    base = Collapsed(full, {}, [], {}) if outside <= max_nodes else runs_drawn    # boxes: small
    made = {}

    def overview(stack=False, compact=False):
        if (stack, compact) not in made:
            made[stack, compact] = overview_dot(full, groups, base, param_names, title,
                                                () if expand is None else expand, stack=stack, known=known,
                                                compact=compact, module_focus=focus_path is not None)
        return made[stack, compact]

    if expand not in (None, True):
        overview()          # names in expand= checked now (the picture is laid out lazily)
    def simpler():      # neither form fits: repeats folded, the graph nearest the loss, fewer nodes (each says so)
        for keep_first in (True, False):     # every run of calls folded: its first call drawn, or not
            small, boxes, box_edges, box_parent, done = collapse(full, groups, 0, keep_first=keep_first)
            if not done or base.boxes == boxes:
                continue
            folded_calls = Collapsed(small, boxes, box_edges, box_parent)
            for stack, compact in ((False, False), (False, True), (True, True)):
                pic.fold_notes.append(f"{CALLS_FOLDED}: {', '.join(f'{k[0][0]} ... {k[-1][0]}' for k in done)}")
                yield overview_dot(full, groups, folded_calls, param_names, title, () if expand is None else expand,
                                   stack=stack, known=known, compact=compact)
        yield from folded_pictures(ops_full, title, notes=pic.fold_notes)
        yield from render.simpler_cuts(ops_full, title)

    # auto: the overview is built only if the op-by-op picture turns out not to read; a model that
    # is one call with no call inside it (a GRU written by hand) would be one box with nowhere to
    # focus next: it says nothing the text does not, and is not drawn
    boxed = _boxed(groups)[1]
    one_box = detail is not None and expand is None and len(boxed) < 2 and not any(groups[k].children for k in boxed)
    pic = ModulePicture(snap, text, detail, None if expand is True or one_box else overview, simpler=simpler,
                        alt=alt_of(full, title))
    pic.drill = next_focus(full, groups, focus_path)
    pic.focused = focus_path is not None
    pic.held_to_rule = expand is None    # expand= asks for one picture: drawn as asked, however large
    return pic


def _focus_boxes_into(snap: Snapshot, gone: dict) -> dict:
    """The focus= boxes of `snap` (above it, outside a module focused on) with their edges to nodes
    folded into a box (a module call, a run of blocks) drawn to that box instead."""
    out = {}
    for field in ("above", "outside"):
        box = getattr(snap, field)
        if box is not None:
            out[field] = dataclasses.replace(box, into=tuple(dict.fromkeys(gone.get(i, i) for i in box.into)))
    return out


CALLS_FOLDED = "identical calls folded"


@dataclass
class Collapsed:
    """What collapse() left to draw: the snapshot, and its run boxes with their edges and parents."""

    snap: Snapshot
    boxes: dict
    box_edges: list
    box_parent: dict


def _detail_grouping(full, groups, drawn: Collapsed, param_names) -> render.Grouping:
    """Every op drawn, in one cluster per outermost call and per block inside it."""
    snap = drawn.snap
    of, clusters = {}, {}
    depth = _depths(groups)
    boxed = {k for k in groups if depth[k] == 0 or (depth[k] <= CLUSTER_DEPTH and groups[k].children)}
    for key, g in sorted(groups.items(), key=lambda kv: kv[1].call.start):   # in call order
        if key not in boxed:       # a layer inside a block is drawn in the block's box: small boxes
            continue               # side by side make a staircase twice as wide (the text lists them)
        clusters[key] = (g.call.parent, _cluster_label(full, groups, key))
    for key, g in groups.items():
        target = key
        while target not in boxed:
            target = groups[target].call.parent
        for n in g.nodes:
            of[n] = target
    for bid, parent in drawn.box_parent.items():
        of[bid] = parent
    return _grouping(snap, of, clusters, drawn.boxes, drawn.box_edges, param_names)


def _cluster_label(full, groups, key, short: bool = False) -> list[Span]:
    totals = _saved_totals(full, _subtree(groups, key))    # collapsed blocks included
    return [Span(groups[key].call.label, bold=True), Span(br=True, br_align=None),
            Span(_money(totals, short), size=10)]


def _grouping(snap, of, clusters, boxes, box_edges, param_names) -> render.Grouping:
    # parents first, so a cluster's parent exists when it is listed
    clusters = {k: (p if p in clusters else None, lab) for k, (p, lab) in clusters.items()}
    return render.Grouping(of={n: str(k) for n, k in of.items() if k is not None},
                           clusters={str(k): (None if p is None else str(p), lab)
                                     for k, (p, lab) in clusters.items()},
                           boxes=boxes, box_edges=box_edges,
                           params=frozenset(t.id for t in snap.tensors.values()
                                            if t.role is Role.LEAF and t.name in param_names
                                            and t.id in of))


# --------------------------------------------------------------------------------
# The overview: one box per module call, listing what each layer in it saved. A branching net
# (a trunk and two heads) drawn op by op is 1,500+ pt wide, its text 5 px tall at 860 px; as
# boxes it is a few hundred pt wide, and still says which layer saved what, held or freed.
OVERVIEW_HINT = "module call as one box: what each layer saved (draw(..., expand=['path']) opens one)"
COMPACT_HINT = "module call as one box: its totals (print(pic) lists each layer)"


def overview_dot(full: Snapshot, groups: dict, drawn: Collapsed, param_names: dict, title=None,
                 expand=(), stack: bool = False, known=None, compact: bool = False, module_focus: bool = False) -> str:
    """DOT of the overview: the calls just inside the model's call (or, when the model itself
    was not called once, each outermost call) drawn as one box each, except the calls whose
    paths are in `expand`, drawn op by op in a cluster; ops made outside every call (a loss)
    are drawn as usual."""
    expand = [expand] if isinstance(expand, str) else list(expand)
    snap = drawn.snap
    depth = _depths(groups)
    level, boxed = _boxed(groups, depth)
    paths = {groups[k].call.path for k in boxed}
    # a module of the model that is not one of these boxes (inside one, or past max_nodes) is not
    # opened; a path the model does not have is a mistake
    unknown = [p for p in expand if p not in paths and (known is None or p not in known)]
    if unknown:
        raise GraphInputError(f"expand= names module paths drawn as one box: {sorted(paths)}; "
                              f"not {unknown}.")
    opened = {k for k in boxed if groups[k].call.path in expand}
    # identical blocks in a row (same ops, same saved states: 4 ResNet blocks) are one box
    run_of = {}
    all_runs = find_runs(full, groups)      # once: each compact box names the runs inside it
    for run in all_runs:
        run = [k for k in run if k in boxed and k not in opened
               and all(n in snap.ops or n in snap.tensors for n in groups[k].nodes)]
        states = {k: _states(full, groups, k) for k in run}
        if len(run) >= MIN_RUN and len(set(states.values())) == 1:
            run_of.update((k, run) for k in run)
    gone, boxes, parent_of = {}, {}, {}
    for i, key in enumerate(boxed, 1):
        if key in opened or (key in run_of and run_of[key][0] != key):
            continue
        if not any(n in snap.ops or n in snap.tensors for n in _subtree(groups, key)):
            continue                    # collapsed into a run box already (a picture past the cap)
        bid = f"call{i}"
        run = run_of.get(key, [key])
        boxes[bid] = _call_box(full, groups, run, param_names, compact, all_runs)
        parent_of[bid] = groups[key].call.parent
        for k in run:
            for n in _subtree(groups, k):
                gone[n] = bid
    for rid, parent in drawn.box_parent.items():   # a run of blocks inside a box: in the box
        inside = next((gone[n] for k in _ancestors(groups, parent) for n in groups[k].nodes if n in gone), None)
        if inside is not None:
            gone[rid] = inside
    edges, box_edges = [], []
    for a, b in [*snap.edges, *drawn.box_edges]:
        e = (gone.get(a, a), gone.get(b, b))
        if e[0] == e[1] or e in box_edges or e in edges:
            continue
        (edges if e == (a, b) and a not in drawn.boxes and b not in drawn.boxes else box_edges).append(e)
    small = dataclasses.replace(
        snap, ops={k: v for k, v in snap.ops.items() if k not in gone},
        tensors={k: v for k, v in snap.tensors.items() if k not in gone}, edges=edges,
        cut_at=[c for c in snap.cut_at if c not in gone], **_focus_boxes_into(snap, gone))
    clusters = {k: (groups[k].call.parent, _cluster_label(full, groups, k, short=compact))
                for k in sorted(groups, key=lambda k: groups[k].call.start)
                if (depth[k] < level) or k in opened}
    of = {}
    for key, g in groups.items():
        target = key
        while target is not None and target not in clusters:
            target = groups[target].call.parent if target in groups else None
        for n in g.nodes:
            if n not in gone:
                of[n] = target
    for bid, parent in {**drawn.box_parent, **parent_of}.items():
        if bid not in gone:
            while parent is not None and parent not in clusters:
                parent = groups[parent].call.parent if parent in groups else None
            of[bid] = parent
    run_boxes = {k: v for k, v in drawn.boxes.items() if k not in gone}
    grouping = _grouping(small, of, clusters, {**run_boxes, **boxes}, box_edges, param_names)
    extra = ()      # the colours the call boxes' rows use (a compact box has none: its totals, in words)
    if not compact:
        states = {s.state for _, s in full.saved_tensors()}
        extra = tuple((colour, words) for state, colour, words in (
            (SavedState.HELD, render.HELD, "saved tensor held in memory"),
            (SavedState.FREED, render.FREED, "saved tensor FREED by backward"),
            (SavedState.RECOMPUTED, render.VALUE, DETAILS["recomputed"]))     # grey: one 'details' entry
            if state in states and state not in {s.state for _, s in small.saved_tensors()})
        if full.shared_buffers() and not small.shared_buffers():
            extra += ((render.VALUE, DETAILS["shared"]),)
    # an opened call's parameters sit below the boxes that feed it, not beside them at the top
    feeding = {a for a, b in box_edges if a in boxes and b not in boxes and b in small.ops}
    params = [t.id for t in small.tensors.values() if t.id in grouping.params and of.get(t.id) in opened]
    grouping.invisible = [(a, t) for a in sorted(feeding) for t in params]
    if stack:       # branches side by side (heads of one trunk, their losses) one below the other
        grouping.invisible += _fan_out_pairs(small, box_edges)
    return render.to_dot(small, title, grouping=grouping, marks=render.Marks(
        legend=extra + ((render.CLUSTER, COMPACT_HINT if compact else OVERVIEW_HINT),), compact=module_focus or compact,
        totals=compact))


def _boxed(groups, depth=None) -> tuple[int, list]:
    """(level, the calls the overview draws as boxes, in call order): the model called once, the calls
    inside it; parts called one by one (feats = net.trunk(x); net.cat(feats); ...) or a model called
    twice, each outermost call."""
    depth = _depths(groups) if depth is None else depth
    outer = [k for k in groups if depth[k] == 0 and groups[k].children]
    level = 1 if len(outer) == 1 else 0
    return level, [k for k in sorted(groups, key=lambda k: groups[k].call.start)
                   if depth[k] == level or (depth[k] == 0 and not groups[k].children)]


def _fan_out_pairs(small: Snapshot, box_edges: list) -> list:
    """[(node, next node)]: the ops and boxes one node feeds, each chained to the next (boxes in
    call order, then ops in the walk's order: the first root's first), so that Graphviz puts
    them one below the other."""
    feeds: dict = {}
    for a, b in [*small.edges, *box_edges]:
        if b not in small.tensors:          # a named tensor hangs off its op: not a branch
            feeds.setdefault(a, []).append(b)

    def order(n):
        return (0, int(n[4:])) if n.startswith("call") else (1, int(re.sub(r"\D", "", n) or 0))

    pairs = []
    for targets in feeds.values():
        targets = sorted(set(targets), key=order)
        pairs += zip(targets, targets[1:])
    return pairs


def _ancestors(groups, key):
    while key is not None and key in groups:
        yield key
        key = groups[key].call.parent


def _states(full, groups, key) -> tuple:
    """What a call's saved tensors are now: ((op, slot, state), ...) in a canonical order."""
    return tuple(sorted((full.ops[n].name, s.slot, s.state.value) for n in _subtree(groups, key)
                        if n in full.ops for s in full.ops[n].saved if s.is_tensor))


def _call_box(full: Snapshot, groups: dict, run: list, param_names: dict, compact: bool = False,
              runs: list = ()) -> Table:
    """One module call (or a run of identical ones) as a table: its name, its totals, one row
    per layer (or op of its own) that saved tensors, each saved tensor held (green) or FREED
    (red), and its parameters."""
    key = run[0]
    call = groups[key].call
    every = [n for k in run for n in _subtree(groups, k)]
    totals = _money(_saved_totals(full, every), short=compact)
    if len(run) > 1:
        last = groups[run[-1]].call.path
        each = _saved_totals(full, _subtree(groups, key))["n"]
        head = f"\u00d7{len(run)} {call.kind}: {call.path} \u2026 {last}, the same ops each"
        totals = f"each: {each} saved{'' if compact else ', as listed'}; all {len(run)}: {totals}"
    else:
        head = call.label
    rows = [[Cell([Span(head, bold=True)], colspan=2, align="LEFT")],
            [Cell([Span(totals)], size=10, colspan=2, align="LEFT")]]
    if compact:     # the overview too tall to read: a call's name and totals only (the text lists each layer)
        inside = set(_inside(groups, key))      # and the runs of identical calls inside it, folded, in words
        for r in [r for r in runs if r[0] in inside and r[0] != key][:2]:
            rows.append([Cell([Span(f"\u00d7{len(r)} {groups[r[0]].call.kind}: {r[0][0]} \u2026 {r[-1][0]}, "
                                   "the same ops each")], size=10, colspan=2, align="LEFT")])
        return Table(rows, style="rounded", colour=render.CLUSTER, bg=CALL_FILL)
    shared = {(op.id, sv.slot) for slots in full.shared_buffers().values() for op, sv in slots}
    makers = sorted(_inside(groups, key), key=lambda k: groups[k].call.start)
    own = []
    for k in makers:
        ops = [full.ops[n] for n in groups[k].nodes if n in full.ops
               and any(s.is_tensor for s in full.ops[n].saved)]
        ops.reverse()                                   # discovery order is backward: forward order
        if not ops:
            continue
        if k == key:                                    # ops its own forward made: a row each, last
            own = [r for op in ops for r in _maker_row("own: " + _short(op.name), [op], shared, call.path, False)]
        else:
            c = groups[k].call
            where = c.path[len(call.path) + 1:] if call.path else c.path
            again = f" call {c.index + 1}" if c.index else ""
            rows += _maker_row(f"{where}{again}: {c.kind}", ops, shared, call.path, len(ops) > 1)
    rows += own
    leaves = [full.tensors[n] for k in run for n in _subtree(groups, k)
              if n in full.tensors and full.tensors[n].name in param_names]
    if leaves:
        with_grad = sum(t.grad is not None for t in leaves)
        state = ("no .grad" if not with_grad else ".grad set" if with_grad == len(leaves)
                 else f"{with_grad} with .grad")
        rows.append([Cell([Span(f"{len(leaves)} parameters: {state}")], colour=render.VALUE, size=10,
                          colspan=2, align="LEFT")])
    return Table(rows, style="rounded", colour=render.CLUSTER, bg=CALL_FILL)


def _inside(groups, key) -> list:
    out, stack = [], [key]
    while stack:
        k = stack.pop()
        if k in groups:
            out.append(k)
            stack.extend(groups[k].children)
    return out


FOLD_RATIO = 16     # a row's saved tensors this many times smaller than its largest: one line


def _maker_row(name: str, ops, shared, path: str, with_op: bool) -> list:
    """A layer's row: each saved tensor on a line (slot, shape, bytes), held or FREED; three or
    more tiny ones in the same state (BatchNorm's running stats) on one line, their bytes summed."""
    saved = [(op, s) for op in ops for s in op.saved if s.is_tensor]
    big = max((s.nbytes or 0) for _, s in saved)
    tiny = [(op, s) for op, s in saved if s.nbytes is not None and s.nbytes * FOLD_RATIO < big]   # never an unknown size
    if len(tiny) < 3 or len({s.state for _, s in tiny}) > 1:
        tiny = []
    items = []
    for op, s in saved:
        if (op, s) in tiny:
            continue
        slot = f"{_short(op.name)}.{s.slot}" if with_op else s.slot
        alias = s.alias or ""
        short = alias[len(path) + 1:] if path and alias.startswith(path + ".") else alias
        if "." in short.removesuffix(".T"):     # 'conv1.weight' in a Block's box; '0.weight' kept whole
            alias = short
        what = f"{slot}{' = ' + alias if alias else ''} {fmt_shape(s.shape) if s.shape else ''} {s.size_words()}"
        items.append(_item(what, s, (op.id, s.slot) in shared))
    if tiny:
        names = ", ".join(f"{_short(op.name)}.{s.slot}" if with_op else s.slot for op, s in tiny)
        total = sum(s.nbytes or 0 for _, s in tiny)
        items.append(_item(f"{names}: {fmt_bytes(total)}", tiny[0][1], False))
    # one table row per saved tensor (lines of one cell sit too close once struck through),
    # the layer's name spanning them
    cells = [Cell(item, size=10, align="LEFT") for item in items]
    first = Cell([Span(name)], size=10, rowspan=len(cells), align="LEFT", valign="TOP")
    return [[first, cells[0]]] + [[c] for c in cells[1:]]


def _short(op_name: str) -> str:
    """'ScaledDotProductEfficientAttentionBackward0' -> 'ScaledDotProductEfficientAttention'."""
    return re.sub(r"Backward\d*$", "", op_name)


def _item(what: str, s, shared: bool) -> list[Span]:
    mark = [Span(" "), Span("shared", colour=render.VALUE, italic=True)] if shared else []
    if s.state is SavedState.FREED:
        return [Span(what, colour=render.FREED, strike=True), Span(" ", colour=render.FREED),
                Span("FREED", colour=render.FREED, bold=True)] + mark
    if s.state is SavedState.HELD:
        return [Span(what, colour=render.MODIFIED if s.modified else render.HELD)] + mark
    if s.state is SavedState.RECOMPUTED:   # a checkpoint re-runs the forward for it in backward
        return [Span(f"{s.slot}: recomputed in backward", colour=render.VALUE)]
    return [Span(f"{s.slot}: unreadable", colour=render.VALUE)]


SCREEN_PX = 1_800    # the op-by-op picture is kept up to about two screens tall, shown at 860 px


class ModulePicture(Picture):
    """draw(loss, modules=model): the graph op by op in module clusters (form 'ops'), or the
    overview, one box per module call (form 'calls'). With both, the op-by-op picture is drawn
    when it reads on about two screens at notebook width: its text reads (picture.layout.reads_at:
    at least 9 px at 860 px) and it is no taller than SCREEN_PX. Otherwise the overview is drawn
    if it does better: larger text, or as readable and shorter. An overview whose text does not
    read (a trunk with four heads side by side) is tried with its branches stacked. `form` says
    which (reading it lays out)."""

    def __init__(self, snap: Snapshot, text: str, ops_dot: str | None, overview, simpler=None,
                 alt: str | None = None):
        """overview: a function overview(stack: bool) -> DOT, or None (only the op-by-op
        picture); called only when needed. simpler: as for Picture (when neither form fits).
        alt: the text alternative (picture.alt_text)."""
        super().__init__(ops_dot if ops_dot is not None else overview(False), text, simpler=simpler, alt=alt)
        self.snapshot = snap
        self._form = "ops" if ops_dot is not None else "calls"
        self.overview = overview
        self.compact = False      # the overview drawn with each call's totals only
        self.drill = None         # the module path to focus next (next_focus), said when the picture simplifies
        self.focused = False      # drawn with focus= a module path: where to go next is always said
        self.fold_notes: list[str] = []   # what each of the first simpler pictures folded (repeats)

    @property
    def whole(self) -> bool:
        """Whether the picture drawn shows every call: as first drawn, or with runs of identical calls
        folded into one box each (not cut to fewer nodes). Reading it lays out."""
        _ = self.svg
        k = self.simplified
        return k == 0 or (0 < k <= len(self.fold_notes) and self.fold_notes[k - 1].startswith(CALLS_FOLDED))

    def _surely_unfit(self) -> bool:
        """Whether no form can fit, told before laying out: the op-by-op picture's box count says
        nothing of the overview's (ResNet-50's 338 ops are 7 boxes by call), so with an overview the
        box count of its most compact form decides."""
        if self.overview is None or not self.held_to_rule:
            return super()._surely_unfit()
        from .layout import measure
        return measure(self.overview(False, True)).nodes > FIT_MAX_BOXES

    @property
    def form(self) -> str:
        """'ops' or 'calls': which picture is drawn (deciding lays it out)."""
        _ = self.svg
        return self._form

    def _overview_svg(self) -> tuple[str, str]:
        if getattr(self, "_overview_drawn", None) is None:      # laid out once (_drawn_svg may ask twice)
            self._overview_drawn = self._lay_out_overview()
        return self._overview_drawn

    def _lay_out_overview(self) -> tuple[str, str]:
        dot = self.overview(False)
        svg = render.svg_from_dot(dot)
        if not reads_at(svg):
            stacked = self.overview(True)
            other = render.svg_from_dot(stacked)
            if smallest_text_px(other) > smallest_text_px(svg):
                dot, svg = stacked, other
        if self.held_to_rule and not fits(svg):   # too tall or too small: each call's name and totals only
            for stack in (False, True):
                compact = self.overview(stack, True)
                other = render.svg_from_dot(compact)
                if fits(other):
                    self.compact = True
                    return compact, other
        return dot, svg

    @property
    def text(self) -> str:
        """Picture's text; when a module is focused on, or the calls are drawn as boxes of totals only,
        or fewer nodes are drawn, a last line says which module path to focus next (focus_next_line)."""
        words = Picture.text.fget(self)
        if 0 < self.simplified <= len(self.fold_notes):
            words += f"\npicture: {self.fold_notes[self.simplified - 1]}"
        if (self.focused or self.compact or self.simplified) and self.drill:
            words = with_focus_next(words, self.drill, modules=True)
        return words

    @text.setter
    def text(self, value: str) -> None:
        self._text = value

    def _drawn_svg(self) -> str:
        """The form chosen as the class docstring says; when it does not fit (picture.layout.fits:
        11 px, 900 px tall), the other form if that one fits (then Picture's simpler pictures)."""
        if self._form == "calls":           # only the overview: maybe with branches stacked
            self.dot, svg = self._overview_svg()
            return svg
        if self.overview is not None and self.held_to_rule and cannot_fit(self.dot):
            dot, other = self._overview_svg()   # op by op it cannot fit: when the overview does, it is
            if fits(other):                     # drawn, as below, without laying out the ops first
                self.dot, self._form = dot, "calls"
                return other
        svg = render.svg_from_dot(self.dot)
        height, reads = shown_px(svg)[1], reads_at(svg)
        other = None
        if self.overview is not None and (not reads or height > SCREEN_PX or not fits(svg)):
            dot, other = self._overview_svg()
            better = (smallest_text_px(other) > smallest_text_px(svg) if not reads
                      else reads_at(other) and shown_px(other)[1] < height)
            if better or (fits(other) and not fits(svg)):
                svg, self.dot, self._form = other, dot, "calls"
        return svg

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
        lines.append(f"collapsed when drawn op by op: {len(run)} x {groups[run[0]].call.kind} "
                     f"({run[0][0]} ... {run[-1][0]}), the same ops each")
    return "\n".join(lines)


FOLD_CUTS = 5        # folded pictures cut to fewer nodes tried at most, after cut_beyond (each a layout)
FOLD_CUT_FROM = 36   # the largest of them, in ops and leaves


def folded_pictures(snap: Snapshot, title=None, marks=None, folded=None, whole=True, notes=None, cuts=FOLD_CUTS):
    """DOT of `snap` with its repeated blocks folded (repeats.fold): whole (when `whole`), then without
    what feeds the folded blocks (repeats.cut_beyond), then cut to fewer nodes each time, nearest the
    output (repeats.cut), each titled with what it folded and left out; nothing when nothing repeats.
    notes: a list that gets each picture's fold words; cuts: at most this many cut pictures (each
    one a layout tried: FOLD_CUTS)."""
    folded = repeats.fold(snap) if folded is None else folded
    if folded is None:
        return
    marks = render.NO_MARKS if marks is None else marks
    if whole:
        if notes is not None:
            notes.append(folded.words)
        yield render.to_dot(folded.snap, folded.title(title), marks=marks, grouping=folded.grouping)
    if cuts == 0:
        return
    near = repeats.cut_beyond(folded)
    if near is not None:
        if notes is not None:
            notes.append(f"{near.words}; what feeds the folded blocks is counted in one box")
        yield render.to_dot(near.snap, near.title(_beyond_title(title)), marks=marks, grouping=near.grouping)
    for n in list(_fold_caps(len(folded.snap.ops) + folded.snap.leaf_count))[:cuts]:
        small = repeats.cut(folded, n)
        if not small.boxes:
            return                  # cut past the folded blocks: the plain cuts say the same
        if notes is not None:
            notes.append(f"{small.words}; drawn up to {n} nodes, the rest counted in one box")
        words = f"the {n} nodes nearest the output"
        yield render.to_dot(small.snap, small.title(f"{title}: {words}" if title else words), marks=marks,
                            grouping=small.grouping)


def _fold_caps(nodes: int):
    """The node counts a folded picture is cut to, largest first: from FOLD_CUT_FROM (more boxes seldom
    fit 900 px at 11 px), in finer steps than render.caps (a fit is often between two halvings)."""
    cap = min(nodes, FOLD_CUT_FROM)
    if cap < nodes:
        yield cap
    while cap > render.SIMPLEST_CAP:
        cap = max(render.SIMPLEST_CAP, cap * 2 // 3)
        yield cap


def _beyond_title(title) -> str:
    words = "the part nearest the output"
    return f"{title}: {words}" if title else words
