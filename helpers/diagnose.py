"""Why did my backward() fail? A diagnosis for a learner's own training loop.

    loss.backward()            # RuntimeError: Trying to backward through the graph a second time
    %load_ext helpers.diagnose # once per session (or: from helpers.diagnose import why_backward_failed)
    %why_backward              # in the next cell: where the engine stopped, which tensor carries
                               # the old graph, the likely pattern and its fix, and a picture

`why_backward_failed()` does the same as a function: with no argument it reads the last error
(`sys.last_value`), or pass the exception or the tensor whose backward failed.

It only *reads*: the graph's nodes, whether their saved tensors are freed, and the names in
the namespace (IPython's user namespace, or `names=` you pass). It never calls backward or
re-runs your step. (The one write: reading a held saved tensor records its size in the node's
`metadata` dict, as every picture of this package does, so a later picture can size it.)

How it finds the stop without running anything: after a failed backward the part of the graph
it ran is freed too, so "freed" alone cannot say where it stopped. But the CPU engine runs nodes
newest first (by the order they were created, `sequence_nr`), so it runs all of this step's
nodes and stops at the newest *older* node that saved a tensor. What is older is read from the
graph: a running total chains one `AddBackward0` per step; otherwise the previous step's
loss, never reachable from this step's, leaves a gap in the creation numbers. (The tests check
the answer against `helpers.trace.where_backward_stops`, which watches a real backward.)

The picture: a small graph whole; a long loop's graph (an RNN over many time steps) around the
stop: the last nodes of the path from the loss, the stop, what feeds it, the rest counted in one
box (`helpers.walk`'s focus=), so that it reads at notebook width.

`StepClock` and `draw_steps` colour a graph's nodes by the training step that created them
(a long loop's graph: around where the newest step uses an older step's graph).
"""
from __future__ import annotations

import html
import itertools
import re
import sys

import torch

from . import render
from .graph import READABLE_WIDTH_PT, Picture, describe, svg_width_pt
from .notebook import shell
from .snapshot import GraphInputError, SavedState, Snapshot
from .trace import next_sequence_nr
from .walk import COUNT_LIMIT, check_max_nodes, nodes_under, snapshot_with_ids

FREED_TEXT = "Trying to backward through the graph a second time"

# fills for "made by step k" (k = 1, 2, ...); index 0 is "before the loop". Chosen apart from
# the leaf blue and the named-tensor green of helpers.render.
STEP_FILLS = ("#d0d0d0", "#f6c8c0", "#fff0a8", "#e4d0f5", "#c9e7e0", "#f7dcbf")
STEP_WORDS = ("grey", "red", "yellow", "purple", "teal", "orange")
OLD_FILL, NEW_FILL = "#f6c8c0", "#fff0a8"      # diagnosis: earlier steps / this step
STOP_FILL = "#ff9f1c"                           # diagnosis: the node where backward stopped
RESET_METHODS = ("reset", "reset_state", "reset_states", "reset_hidden", "init_hidden", "reset_mem")
MAX_NAMES = 20_000                              # namespace entries looked at, at most
# A diagnosis picture draws a graph of up to max_nodes (default 30) whole if that reads at
# notebook width, else around the stop: up to ABOVE_STOP nodes up the path from the loss (fewer
# when that is still too wide), the stop, what feeds it, at most AROUND_NODES nodes in all. An
# RNN over 30 time steps, drawn whole up to 60 nodes, was 1,566 pt wide (5.5 px text at 860 px,
# and the stop not drawn); around the stop it is 802 pt wide (10.7 px).
ABOVE_STOP = 3
AROUND_NODES = 12


# --------------------------------------------------------------------------------
# Reading the graph: creation order, and which part is older than the step that failed
def _seq(fn) -> int:
    return fn._sequence_nr()


def _is_leaf_node(fn) -> bool:
    return type(fn).__name__ == "AccumulateGrad"


def _step_start(root_fn, ops: list):
    """The creation number where this step's part of the graph begins, or None if unknown.

    ops: every non-leaf node reachable from the root. Two signs, in this order:
    a running total (the root is an add whose input is the same add a step earlier), then
    the largest gap in creation numbers (the previous step's loss and whatever else it made
    after the carried tensor is not reachable from this step's loss).
    """
    chain = [n for n, _ in root_fn.next_functions if n is not None and n.name() == root_fn.name()
             and not _is_leaf_node(n)]
    if root_fn.name().startswith("AddBackward") and chain:
        return _seq(max(chain, key=_seq)) + 1
    seqs = sorted({_seq(f) for f in ops})
    gaps = [(b - a, b) for a, b in zip(seqs, seqs[1:]) if b - a > 1]
    if not gaps:
        return None
    return max(gaps)[1]


class _Graph:
    """The graph behind the failed root as the walk recorded it (helpers.walk.snapshot_with_ids,
    once, up to walk.COUNT_LIMIT): its snapshot and the node <-> id maps. Reachability and
    paths are read from the snapshot's ids; only `feeds` and the candidate pictures (drawn
    around the stop) walk live nodes again."""

    def __init__(self, snap: Snapshot, ids: dict):
        self.snap, self.ids = snap, ids
        self.node_of = {i: fn for fn, i in ids.items()}

    def path(self, start, target) -> list:
        """Shortest chain of nodes from `start` down to `target`, following inputs."""
        a, b = self.ids.get(start), self.ids.get(target)
        return [] if a is None or b is None else [self.node_of[i] for i in self.snap.path(a, b)]

    def reaching(self, target) -> set:
        """The nodes `target` feeds, directly or not, itself included."""
        return {self.node_of[i] for i in self.snap.reaching(self.ids[target]) if i in self.node_of}

    def feeds(self, fn, reaching: set) -> bool:
        """Whether node `fn` is one of `reaching` (a `reaching(target)` set) or is fed by one: read
        from the snapshot for a node of the graph; a node outside it (an LSTM's returned state the
        loss does not use) is walked only until it meets the graph, whose part is known."""
        if fn in self.ids:
            return fn in reaching
        seen, stack = {fn}, [fn]
        while stack and len(seen) < COUNT_LIMIT:
            for n, _ in stack.pop().next_functions:
                if n is None or n in seen:
                    continue
                if n in self.ids:
                    if n in reaching:
                        return True
                    continue        # in the graph but not feeding the target: nor does what it feeds
                seen.add(n)
                stack.append(n)
        return False

    def leaves_under(self, fn) -> list:
        """The leaf tensors behind node `fn`."""
        under = self.snap.under([self.ids[fn]]) if fn in self.ids else set()
        return [self.node_of[i].variable for i in under
                if i in self.node_of and _is_leaf_node(self.node_of[i])]


# --------------------------------------------------------------------------------
# Names: tensors in the user's namespace, in tuples, and on modules
def _named_tensors(ns) -> list:
    """[(name, tensor)] for tensors in `ns`: plain names, items of tuples/lists (`hidden[0]`),
    and tensor attributes of nn.Module instances and their submodules (`model.rnn.hidden`).
    Reads `__dict__` only (no properties run), skips names starting with '_'."""
    out, modules = [], []

    def add(name, value):
        if isinstance(value, torch.Tensor):
            out.append((name, value))
        elif isinstance(value, (tuple, list)) and 0 < len(value) <= 16:
            for i, v in enumerate(value):
                if isinstance(v, torch.Tensor):
                    out.append((f"{name}[{i}]", v))
                elif isinstance(v, (tuple, list)) and 0 < len(v) <= 16:   # [(h, c)] of a stack
                    out.extend((f"{name}[{i}][{j}]", w) for j, w in enumerate(v)
                               if isinstance(w, torch.Tensor))

    for i, (name, value) in enumerate(list(ns.items())):
        if i >= MAX_NAMES:
            break
        if not isinstance(name, str) or name.startswith("_"):
            continue
        if isinstance(value, torch.nn.Module):
            modules.append((name, value))
        else:
            add(name, value)
    seen = set()
    for name, module in modules:
        try:
            subs = list(module.named_modules(prefix=name))
        except Exception:   # a user's module may do anything: skip it, never raise
            continue
        for sub_name, sub in subs:
            if id(sub) in seen:
                continue
            seen.add(id(sub))
            for attr, value in list(vars(sub).items()):
                if not attr.startswith("_"):
                    add(f"{sub_name}.{attr}", value)
            for kind in ("_buffers", "_parameters"):
                for attr, value in list(vars(sub).get(kind, {}).items()):
                    add(f"{sub_name}.{attr}", value)
    return out


def _parameter_names(named, graph: _Graph, root) -> dict:
    """{name: leaf} for the named leaves behind `root` (parameters of modules in the namespace
    are named by `_named_tensors` only when they are attributes; add the module parameters)."""
    leaves = {id(t) for t in graph.leaves_under(root.grad_fn)}
    return {n: t for n, t in named if t.grad_fn is None and id(t) in leaves}


def _module_named(ns, dotted: str):
    """The module object behind 'model.rnn' in `ns`, or None."""
    obj = ns.get(dotted.split(".")[0]) if ns is not None else None
    for part in dotted.split(".")[1:]:
        obj = vars(obj).get("_modules", {}).get(part) if obj is not None else None
    return obj if isinstance(obj, torch.nn.Module) else None


def _owner(ns, leaves) -> str | None:
    """Name of a module in `ns` whose parameters include one of `leaves`."""
    ids = {id(t) for t in leaves}
    for name, value in list((ns or {}).items())[:MAX_NAMES]:
        if isinstance(name, str) and not name.startswith("_") and isinstance(value, torch.nn.Module):
            try:
                if any(id(p) in ids for p in value.parameters()):
                    return name
            except Exception:
                continue
    return None


def _ipython_namespace():
    ip = shell()
    return None if ip is None else ip.user_ns


# --------------------------------------------------------------------------------
# Finding the tensor and the error
def _tensors_from_traceback(tb) -> list:
    """The tensors a failed backward()/autograd.grad() was called on, from its traceback frames."""
    found = []
    while tb is not None:
        frame = tb.tb_frame
        code = frame.f_code
        if code.co_filename.replace("\\", "/").endswith("torch/autograd/graph.py") and \
                code.co_name == "_engine_run_backward":
            outs = frame.f_locals.get("t_outputs") or ()
            found = [t for t in outs if isinstance(t, torch.Tensor)]
        tb = tb.tb_next
    return found


class Diagnosis:
    """What `why_backward_failed` found. `.verdict` is one of: 'stopped' (the error explained),
    'would succeed', 'no graph', 'unrelated', 'no error', 'bad input', 'too large'."""

    def __init__(self, verdict: str, message: str):
        self.verdict = verdict
        self.message = message
        self.stopped_at = None        # name of the node the engine stopped in
        self.freed = []               # its freed saved tensors: ['result: (1, 3) float32 12 B']
        self.path = []                # node names from the loss's node to the stop
        self.culprits = []            # names in the namespace that carry the old graph
        self.pattern = None           # 'running total', 'state carried', ...
        self.fix = None               # one or two sentences
        self.names_available = True
        self.not_yet_run = False      # True: diagnosed before backward() was called
        self.picture = None

    def __repr__(self) -> str:
        return self.message

    def _repr_mimebundle_(self, include=None, exclude=None):
        out = {"text/plain": self.message}
        body = f"<pre style=\"white-space:pre-wrap\">{html.escape(self.message)}</pre>"
        if self.picture is not None:
            body += render.svg_img(self.picture.svg, "graph of the failed backward: " + (self.stopped_at or ""),
                                   style="max-width:100%")
        out["text/html"] = body
        return out


def why_backward_failed(what=None, *, names=None, max_nodes: int = 30) -> Diagnosis:
    """Explain "Trying to backward through the graph a second time" for your own code.

    what: nothing (the last error of this session, `sys.last_value`), the exception, or the
    tensor whose backward() failed. names: {name: object} to look through for the tensor that
    carries the old graph; in IPython the user namespace is used by default.
    max_nodes: a graph of at most this many nodes that fits the notebook's width is drawn whole;
    otherwise the picture is drawn around the stop (the last nodes of the path from the loss, the
    stop, what feeds it: at most AROUND_NODES, or max_nodes if fewer), the rest counted in one
    box. The analysis always sees the whole graph.
    Returns a `Diagnosis` that shows as text and a picture. Never raises for bad input.
    """
    try:
        return _diagnose(what, names, max_nodes)
    except GraphInputError as err:    # e.g. torch refuses to give the root's grad_fn
        return Diagnosis("bad input", f"why_backward: {err}")


def _diagnose(what, names, max_nodes) -> Diagnosis:
    try:
        check_max_nodes(max_nodes)
    except GraphInputError as err:
        return Diagnosis("bad input", f"why_backward: {err}")
    err, roots = None, None
    if what is None:
        err = getattr(sys, "last_value", None)
        if err is None:
            return Diagnosis("no error", (
                "why_backward: no error has happened yet in this session, so there is nothing to "
                "explain. Run the cell whose backward() fails, then this again in the next cell; "
                "or pass the tensor: why_backward_failed(loss)."))
    elif isinstance(what, BaseException):
        err = what
    elif isinstance(what, torch.Tensor):
        roots = [what]
    else:
        kind = "None" if what is None else f"a {type(what).__name__}"
        hint = " (did you pass the model? pass its loss)" if isinstance(what, torch.nn.Module) else ""
        hint = " (a Python number has no graph: did you call .item()?)" if isinstance(what, (int, float)) else hint
        return Diagnosis("bad input", f"why_backward: expected the tensor whose backward() failed, or "
                                     f"the exception; got {kind}{hint}.")
    if err is not None:
        first = (str(err).strip().splitlines() or [""])[0]
        if not (isinstance(err, RuntimeError) and FREED_TEXT in str(err)):
            return Diagnosis("unrelated", (
                f"why_backward: the last error was {type(err).__name__}: {first[:160]}\n"
                f"That is not \"{FREED_TEXT}\", the error this helper explains; "
                "nothing to diagnose here."))
        roots = _tensors_from_traceback(err.__traceback__)
        if not roots:
            return Diagnosis("bad input", (
                "why_backward: the last error is the freed-graph error, but its traceback no longer "
                "shows which tensor backward() was called on. Pass it: why_backward_failed(loss)."))
    root = roots[0]
    if root.grad_fn is None:
        if not root.requires_grad:
            return Diagnosis("no graph", (
                "why_backward: this tensor has no autograd graph (requires_grad=False, no grad_fn), "
                "so backward() on it fails for another reason: nothing here was freed. Compute it "
                "from tensors that require grad, outside torch.no_grad() and without .detach()."))
        return Diagnosis("would succeed", "why_backward: this is a leaf tensor: backward() on it "
                                         "would succeed (there is nothing saved to free).")
    ns = names if names is not None else _ipython_namespace()
    return _explain(root, ns, names_available=ns is not None, max_nodes=max_nodes)


def _explain(root, ns, names_available, max_nodes) -> Diagnosis:
    named = _named_tensors(ns) if ns is not None else []
    snap, ids = snapshot_with_ids(root, max_nodes=COUNT_LIMIT)
    if snap.truncated:
        return Diagnosis("too large", f"why_backward: the graph has more than {COUNT_LIMIT:,} nodes: "
                                     "too large to diagnose node by node.")
    saved = {fn: [s for s in snap.ops[i].saved if s.is_tensor] for fn, i in ids.items() if i in snap.ops}
    freed_total = sum(1 for ss in saved.values() for s in ss if s.state is SavedState.FREED)
    if freed_total == 0:
        n = sum(len(ss) for ss in saved.values())
        return Diagnosis("would succeed", (
            f"why_backward: backward() on this tensor would succeed now: none of the {n} tensors "
            f"saved in its graph ({len(saved)} nodes) is freed. If it failed before, the graph was "
            "rebuilt since."))
    ops = list(saved)                                       # non-leaf nodes
    start = _step_start(root.grad_fn, ops)
    order = sorted(ops, key=_seq, reverse=True)             # the CPU engine's order
    old = [fn for fn in order if start is None or _seq(fn) < start]
    stop = next((fn for fn in old if any(s.state is SavedState.FREED for s in saved[fn])), None)
    if stop is None:   # cannot happen for a graph built by a loop; say so rather than guess
        return Diagnosis("would succeed", "why_backward: no node older than this step holds a freed "
                                         "tensor: backward() on it should not fail this way.")
    d = Diagnosis("stopped", "")
    d.names_available = names_available
    d.stopped_at = stop.name()
    d.freed = [s.describe() for s in saved[stop] if s.state is SavedState.FREED]
    graph = _Graph(snap, ids)
    path = graph.path(root.grad_fn, stop)
    d.path = [fn.name() for fn in path]
    old_set = set(old)
    entries = []                                            # older nodes this step's part uses
    if start is not None:
        for fn in ops:
            if fn not in old_set:
                entries += [n for n in map(graph.node_of.get, snap.ops[ids[fn]].inputs)
                            if n in old_set and n not in entries]
    _name_culprits(d, root, named, ns, stop, old_set, entries, start, path, graph)
    d.picture = _picture(d, root, named, stop, path, old_set, max_nodes, graph)
    # called before backward (not after the error): this step's part is still held
    d.not_yet_run = start is not None and not any(
        s.state is SavedState.FREED for fn in ops if fn not in old_set for s in saved[fn])
    d.message = _report(d, snap, start)
    return d


def _name_culprits(d, root, named, ns, stop, old_set, entries, start, path, graph: _Graph) -> None:
    """Fill d.culprits, d.pattern, d.fix."""
    on_graph = [(n, t) for n, t in named if t.grad_fn is not None]
    running = start is not None and root.grad_fn.name().startswith("AddBackward") and any(
        e.name() == root.grad_fn.name() for e in entries)
    root_names = [n for n, t in on_graph if t is root]
    if running:
        d.pattern = "running total"
        d.culprits = root_names
        who = f"`{root_names[0]}`" if root_names else "the tensor you called backward() on"
        d.fix = (f"{who} is a running total: it adds this step's loss to the graphs of all earlier "
                 f"steps. Keep the total as a number, `total += loss.item()`, and call backward() on "
                 f"this step's loss only.")
        return
    if start is None:   # no part of the graph is newer than the rest: one graph, backwarded again
        d.pattern = "same graph backwarded twice"
        d.culprits = root_names
        d.fix = ("Every part of this graph was freed by an earlier backward(): backward was called "
                 "twice on the same graph. Build the graph again (run the forward again), or pass "
                 "retain_graph=True to the first call if you really need both.")
        return
    # a tensor made before this step (before the loop), still used: its graph was freed by step 1
    reach_stop = graph.reaching(stop)                       # the nodes the stop feeds, and itself
    old_named = [(n, t) for n, t in on_graph if t.grad_fn in old_set and t is not root
                 and graph.feeds(t.grad_fn, reach_stop)]
    entry_names = {e.name() for e in entries}
    carried = [(n, t) for n, t in on_graph if t.grad_fn not in old_set and t is not root
               and t.grad_fn.name() in entry_names and graph.feeds(t.grad_fn, reach_stop)]
    if carried:   # on the path first, then the deepest (closest to the older part)
        on_path = set(path)
        carried.sort(key=lambda nt: (nt[1].grad_fn not in on_path, _seq(nt[1].grad_fn)))
        d.culprits = [n for n, _ in carried]
        first = d.culprits[0]
        if "[" in first:   # an item of a tuple: LSTM (h, c); or of a list of them
            base = first.split("[")[0]
            d.pattern = "state tuple carried across steps"
            how = (f"`{base} = [tuple(s.detach() for s in st) for st in {base}]`" if first.count("[") > 1
                   else f"`{base} = tuple(s.detach() for s in {base})`")
            d.fix = (f"`{base}` carries the previous step's graph into this one. Detach every state at "
                     f"the start of each step: {how} (the `repackage_hidden` helper of many RNN codebases).")
        elif "." in first:
            owner_name, attr = first.rsplit(".", 1)
            module = _module_named(ns, owner_name)
            reset = next((m for m in RESET_METHODS if module is not None and callable(getattr(type(module), m, None))), None)
            if reset:
                d.pattern = "module state, reset not called"
                d.fix = (f"`{first}` is state that `{owner_name}` keeps between calls, and it still holds "
                         f"the previous step's graph. Call `{owner_name}.{reset}()` at the start of each "
                         f"step (or detach it: `{first} = {first}.detach()`).")
            else:
                d.pattern = "state stored on a module"
                d.fix = (f"`{first}` is state that `{owner_name}` keeps between calls, and it still holds "
                         f"the previous step's graph. Detach it at the start of each step: "
                         f"`{first} = {first}.detach()`.")
        else:
            d.pattern = "state carried across steps"
            d.fix = (f"`{first}` carries the previous step's graph into this one. Detach it at the start "
                     f"of each step: `{first} = {first}.detach()` (truncated backpropagation through time).")
        return
    if old_named:
        old_named.sort(key=lambda nt: _seq(nt[1].grad_fn), reverse=True)
        d.culprits = [n for n, _ in old_named]
        first = d.culprits[0]
        tensor = old_named[0][1]
        leaves = graph.leaves_under(tensor.grad_fn)
        owner = _owner(ns, leaves)
        if owner:
            d.pattern = "computed once before the loop (by a module)"
            d.fix = (f"`{first}` was computed by `{owner}` once, before the loop, with gradients on; "
                     f"the first step's backward freed its graph. If `{owner}` is frozen, compute it "
                     f"under `with torch.no_grad():` (and call `{owner}.requires_grad_(False)`); if it "
                     f"should train, run `{owner}` inside the loop.")
        else:
            src = [n for n, t in (ns or {}).items() if isinstance(n, str) and not n.startswith("_")
                   and isinstance(t, torch.Tensor) and any(t is leaf for leaf in leaves)]
            made = f" from `{src[0]}`" if src else ""
            d.pattern = "derived once before the loop"
            d.fix = (f"`{first}` was built{made} once, before the loop, with gradients on; the first "
                     f"step's backward freed its graph. Recompute it inside the loop, every step "
                     f"(or, if it should not train, build it under `torch.no_grad()`).")
        return
    d.pattern = "older graph reused"
    d.fix = (f"A tensor made before this step (its node {stop.name()}) feeds this step. Detach it "
             f"at the start of the step (`t = t.detach()`), or compute it inside the loop.")


def _picture(d, root, named, stop, path, old_set, max_nodes, graph: _Graph) -> Picture:
    """The graph, whole when it has at most `max_nodes` nodes and lays out narrow enough to read
    at notebook width (READABLE_WIDTH_PT); else drawn `around` the stop, the rest counted in one
    box, so that the picture of a long loop stays readable."""
    keep = {n: t for n, t in named if n in d.culprits}
    keep.update(_parameter_names(named, graph, root))
    root_name = next((n for n, t in named if t is root), "loss")
    if all(t is not root for t in keep.values()):
        keep[root_name] = root
    whole = []
    if graph.snap.total_nodes <= max_nodes:
        whole = [_stop_picture(d, *snapshot_with_ids(root, names=keep, max_nodes=max_nodes), stop, path, old_set)]
    focused = (_stop_picture(d, snap, ids, stop, path, old_set)
               for snap, ids in _around([root], path, keep, min(max_nodes, AROUND_NODES)))
    return _readable(itertools.chain(whole, focused))


def _around(roots, path: list, names, max_nodes: int):
    """(snapshot, ids) of the graph behind `roots` drawn around the last node of `path` (a chain
    of nodes from a root down to it): focused on the node ABOVE_STOP steps up the path, then
    fewer (lazily), each drawing that last node, what feeds it, up to `max_nodes` nodes; the
    rest counted in one box (helpers.walk, focus=)."""
    for k in range(min(ABOVE_STOP, len(path) - 1), -1, -1):
        snap, ids = snapshot_with_ids(*roots, names=names, max_nodes=max_nodes, focus=path[-1 - k])
        if path[-1] in ids:
            yield snap, ids


def _readable(pictures):
    """The first of `pictures` (laid out one by one) that reads at notebook width
    (graph.READABLE_WIDTH_PT), else the narrowest; None for none."""
    best = None
    for pic in pictures:
        if best is None or svg_width_pt(pic.svg) < svg_width_pt(best.svg):
            best = pic
        if svg_width_pt(best.svg) <= READABLE_WIDTH_PT:
            break
    return best


def _stop_picture(d, snap, ids, stop, path, old_set) -> Picture:
    """`snap` drawn with this step's and earlier steps' colours, the stop and the path marked."""
    fills = {i: (OLD_FILL if fn in old_set else NEW_FILL) for fn, i in ids.items() if not _is_leaf_node(fn)}
    on_path = [ids.get(fn) for fn in path]
    marked = {(b, a) for a, b in zip(on_path, on_path[1:]) if a and b}   # forward direction
    if snap.above is not None:    # the path goes on, through the box, to the loss
        marked |= {(i, "above") for i in snap.above.into}
    stop_id = ids.get(stop)
    if stop_id is not None:
        fills[stop_id] = STOP_FILL
    title = f"{'will stop' if d.not_yet_run else 'stopped'} in {d.stopped_at}"
    if snap.above is not None:
        title += ": the graph around it"
    legend = ((STOP_FILL, f"where backward stopped: {d.stopped_at}"),
              (OLD_FILL, "made by an earlier step (freed before this call)"),
              (NEW_FILL, "made by this step"), (render.HIGHLIGHT, "thick edges: the path from the loss"))
    marks = render.Marks(fills=fills, path=frozenset(marked), legend=legend)
    return Picture(render.to_dot(snap, title, marks=marks), describe(snap))


def _freed_words(freed: list) -> str:
    """'result (1, 4) float32 16 B' or, when sizes are unknown, the slot names; at most four."""
    short = [f.replace(": size unknown", "") for f in freed]
    more = f" and {len(short) - 4} more" if len(short) > 4 else ""
    return ", ".join(short[:4]) + more if short else "its saved tensors"


def path_words(path: list[str]) -> str:
    """'A -> (B -> C) x29 -> D': a block of node names repeated back to back, as each time step
    of a long loop repeats, is written once with its count (the longest saving first)."""
    out, i = [], 0
    while i < len(path):
        best = (1, 1)                              # (block length, repeats)
        for size in range(1, (len(path) - i) // 2 + 1):
            block, k = path[i:i + size], 1
            while path[i + k * size:i + (k + 1) * size] == block:
                k += 1
            if k > 1 and size * (k - 1) > best[0] * (best[1] - 1):
                best = (size, k)
        size, k = best
        if k > 2 or (k == 2 and size > 1):
            words = " -> ".join(path[i:i + size])
            out.append(f"({words}) x{k}" if size > 1 else f"{words} x{k}")
        else:
            out.extend(path[i:i + size * k])
        i += size * k
    return " -> ".join(out)


def _report(d, snap: Snapshot, start) -> str:
    lines = ["why backward will fail:" if d.not_yet_run else "why backward failed:"]
    if not d.names_available:
        lines.append("  carried by: names unavailable (not running in IPython; pass names=globals() "
                     "to look for them)")
    elif d.culprits:
        lines.append("  carried by: " + ", ".join(d.culprits))
    else:
        lines.append("  carried by: no name in your namespace points at the old part")
    lines.append(f"  likely pattern: {d.pattern}")
    lines.append(f"  fix: {d.fix}")
    lines.append(f"  {'will stop' if d.not_yet_run else 'stopped'} in: {d.stopped_at}, whose saved "
                 f"{_freed_words(d.freed)} had been freed by an earlier backward")
    lines.append("  path from the loss: " + path_words(d.path))
    lines.append("  (not retain_graph=True: that silences the error, and the graph, memory and "
                 "time per step then grow with every step)")
    return "\n".join(lines)


# --------------------------------------------------------------------------------
# Nodes coloured by the step that made them
class StepClock:
    """Marks where each training step begins in autograd's creation order.

        clock = StepClock()
        for step in range(3):
            clock.tick()          # first line of the loop body
            ...
        draw_steps(loss, clock)   # nodes coloured by the step that created them
    """

    def __init__(self):
        self.starts = []

    def tick(self) -> None:
        self.starts.append(next_sequence_nr())

    def step_of(self, fn) -> int:
        """0 for nodes made before the first tick, else the step (1, 2, ...) that made `fn`."""
        s = _seq(fn)
        return sum(1 for b in self.starts if s >= b)


class StepPicture(Picture):
    """A picture from `draw_steps`; `.snapshot` and `.steps` ({op id: step}) for checks."""

    def __init__(self, dot, text, snap, steps):
        super().__init__(dot, text)
        self.snapshot, self.steps = snap, steps

    def saved_states_by_step(self) -> dict:
        """{step: {'held': n, 'freed': n}} over the saved tensors of the ops drawn."""
        out = {}
        for op, s in self.snapshot.saved_tensors():
            k = self.steps[op.id]
            out.setdefault(k, {"held": 0, "freed": 0})
            out[k][s.state] = out[k].get(s.state, 0) + 1
        return out


def draw_steps(*roots, clock: StepClock, names=None, title=None, max_nodes=120, focus=None) -> StepPicture:
    """A picture of the graph behind `roots` with every op filled by the step that created it.

    names: {name: tensor}, or a whole namespace such as `globals()`: then its tensors, the items
    of its tuples and lists, and the tensors of its modules are named (as why_backward does).
    focus: as in helpers.graph.draw, only the part of the graph under it is drawn.
    Without focus, a graph of more than `max_nodes` nodes, or one too wide to read at notebook
    width, is drawn around where the newest step uses an older step's graph (the last nodes of
    the newest step on the way there, the older node, what feeds it), the rest counted in a box.
    """
    if names is not None and any(not isinstance(v, torch.Tensor) for v in names.values()):
        names = dict(_named_tensors(names))
    if focus is not None:
        return _step_picture(*snapshot_with_ids(*roots, names=names, max_nodes=max_nodes, focus=focus),
                             clock, title)
    whole = _step_picture(*snapshot_with_ids(*roots, names=names, max_nodes=max_nodes), clock, title)
    if not whole.snapshot.truncated and svg_width_pt(whole.svg) <= READABLE_WIDTH_PT:
        return whole
    path = _where_steps_meet(roots, clock)
    if not path:
        return whole
    focused = (_step_picture(snap, ids, clock, title, around=(clock.step_of(path[-2]), clock.step_of(path[-1])))
               for snap, ids in _around(roots, path, names, min(max_nodes, AROUND_NODES)))
    return _readable(itertools.chain([] if whole.snapshot.truncated else [whole], focused)) or whole


def _where_steps_meet(roots, clock: StepClock) -> list:
    """The shortest chain of nodes from a root down to the first node (nearest the roots) of an
    older step that a node of the newest step uses; [] when the graph holds one step only."""
    parents: dict = {}
    nodes, _ = nodes_under([t.grad_fn for t in roots if t.grad_fn is not None], parents=parents)
    ops = [fn for fn in nodes if not _is_leaf_node(fn)]
    if not ops:
        return []
    newest = max(clock.step_of(fn) for fn in ops)
    meet = next((fn for fn in ops if clock.step_of(fn) < newest and parents[fn] is not None
                 and clock.step_of(parents[fn]) == newest), None)
    path = []
    while meet is not None:
        path.append(meet)
        meet = parents[meet]
    return path[::-1]


def _step_picture(snap, ids, clock: StepClock, title, around=None) -> StepPicture:
    """`snap` with every op filled by the step that made it. around: (newer step, older step)
    when it is drawn around where the newer step uses the older one's graph."""
    steps = {i: clock.step_of(fn) for fn, i in ids.items() if not _is_leaf_node(fn)}
    fills = {i: STEP_FILLS[min(k, len(STEP_FILLS) - 1)] for i, k in steps.items()}
    used = sorted(set(steps.values()))
    words = {k: "made before the loop" if k == 0 else f"made by step {k}" for k in used}
    key = ", ".join(f"{words[k]}: {STEP_WORDS[min(k, len(STEP_WORDS) - 1)]}" for k in used)
    head = (title + ": " if title else "") + "ops coloured by the training step that made them"
    if around is not None:   # short: the title sits beside the box of nodes not drawn
        older = "the graph made before the loop" if around[1] == 0 else f"step {around[1]}'s graph"
        head = (title + ": " if title else "") + f"where step {around[0]} uses {older}"
    legend = tuple((STEP_FILLS[min(k, len(STEP_FILLS) - 1)], words[k]) for k in used)
    by_step = "\n".join(("before the loop" if k == 0 else f"step {k}") + ": "
                        + ", ".join(f"{i} {snap.ops[i].name}" for i, s in steps.items() if s == k)
                        for k in used)
    dot = render.to_dot(snap, head, marks=render.Marks(fills=fills, legend=legend))
    return StepPicture(dot, f"{head} ({key}).\n{describe(snap)}\n{by_step}", snap, steps)


# --------------------------------------------------------------------------------
# IPython: %load_ext helpers.diagnose, then %why_backward [tensor]
def enable_magic() -> None:
    """Register %why_backward in the running IPython (silent and safe to call again, unlike a
    second %load_ext, which prints). Does nothing outside IPython."""
    ip = shell()
    if ip is not None:
        load_ipython_extension(ip)


def load_ipython_extension(ip) -> None:
    def why_backward(line):
        """%why_backward [expr]: explain the last 'backward through the graph a second time' error
        (or the graph of the tensor `expr`, e.g. %why_backward loss)."""
        line = line.strip()
        if not line:
            return why_backward_failed()
        if not re.fullmatch(r"[A-Za-z_][\w.\[\]'\"]*", line):
            return Diagnosis("bad input", f"why_backward: give a name, like %why_backward loss; got {line!r}.")
        try:
            value = ip.ev(line)
        except Exception as err:   # a typo in the name: say so, no traceback
            return Diagnosis("bad input", f"why_backward: could not read {line!r}: {type(err).__name__}: {err}")
        return why_backward_failed(value)

    ip.register_magic_function(why_backward, "line", "why_backward")
