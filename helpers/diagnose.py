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

The seam with the picture engine: this module owns the analysis (what failed, which name
carries it, the fix); helpers.diagnosis_picture owns the pictures (`stop_picture`, and
`StepClock`/`draw_steps`, re-exported here). helpers.names owns where names are looked for.
"""
from __future__ import annotations

import html
import re
import sys

import torch

from . import render
from .diagnosis_picture import STOP_FILL, StepClock, draw_steps, is_leaf_node, seq, stop_picture  # noqa: F401 (re-exported)
from .names import MAX_NAMES, named_tensors
from .notebook import shell
from .snapshot import GraphInputError, SavedState, Snapshot
from .walk import COUNT_LIMIT, check_max_nodes, snapshot_with_ids

FREED_TEXT = "Trying to backward through the graph a second time"

RESET_METHODS = ("reset", "reset_state", "reset_states", "reset_hidden", "init_hidden", "reset_mem")


# --------------------------------------------------------------------------------
# Reading the graph: creation order, and which part is older than the step that failed
def _step_start(root_fn, ops: list):
    """The creation number where this step's part of the graph begins, or None if unknown.

    ops: every non-leaf node reachable from the root. Two signs, in this order:
    a running total (the root is an add whose input is the same add a step earlier), then
    the largest gap in creation numbers (the previous step's loss and whatever else it made
    after the carried tensor is not reachable from this step's loss).
    """
    chain = [n for n, _ in root_fn.next_functions if n is not None and n.name() == root_fn.name()
             and not is_leaf_node(n)]
    if root_fn.name().startswith("AddBackward") and chain:
        return seq(max(chain, key=seq)) + 1
    seqs = sorted({seq(f) for f in ops})
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
                if i in self.node_of and is_leaf_node(self.node_of[i])]


# --------------------------------------------------------------------------------
# Names: tensors in the user's namespace (helpers.names), and modules owning leaves
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
    named = named_tensors(ns) if ns is not None else []
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
    order = sorted(ops, key=seq, reverse=True)             # the CPU engine's order
    old = [fn for fn in order if start is None or seq(fn) < start]
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
    # called before backward (not after the error): this step's part is still held
    d.not_yet_run = start is not None and not any(
        s.state is SavedState.FREED for fn in ops if fn not in old_set for s in saved[fn])
    d.picture = stop_picture(root, stop=stop, path=path, old=old_set, names=_picture_names(d, root, named, graph),
                             max_nodes=max_nodes, will_stop=d.not_yet_run)
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
        carried.sort(key=lambda nt: (nt[1].grad_fn not in on_path, seq(nt[1].grad_fn)))
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
        old_named.sort(key=lambda nt: seq(nt[1].grad_fn), reverse=True)
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


def _picture_names(d, root, named, graph: _Graph) -> dict:
    """{name: tensor} the diagnosis picture labels: the culprits, the named leaves behind the
    root, and the root itself (as 'loss' when it has no name)."""
    keep = {n: t for n, t in named if n in d.culprits}
    keep.update(_parameter_names(named, graph, root))
    root_name = next((n for n, t in named if t is root), "loss")
    if all(t is not root for t in keep.values()):
        keep[root_name] = root
    return keep


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
