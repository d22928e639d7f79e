"""Property-based fuzzing of the graph renderer (walk.snapshot -> render DOT -> text).

Hypothesis writes small random programs of tensor ops (views, in-place ops, ops with
several outputs, custom autograd.Functions, hooks, detach, no-grad regions), runs them,
and draws the graph before backward, after backward (with or without retain_graph),
and after a second backward. Every picture must satisfy, checked independently of
backward_twice.walk:

- it never crashes and never hangs (each example runs under a timer);
- it shows exactly the nodes reachable from the roots through `next_functions`
  (op names as a multiset, leaves as a set), or, when capped, draws at most
  `max_nodes` and counts the rest exactly;
- a saved tensor is marked freed exactly when reading its `_saved_*` attribute
  (`saved_tensors` for a custom Function) really raises, and held exactly when it reads;
- its text is deterministic (drawing twice gives the same text) and has no addresses;
- a transpose of a leaf used by one op (a Linear weight's TBackward0) is an edge marked '.T',
  not a box, exactly when the graph says so (counted from `next_functions`), and only there;
- a watch() pair draws each node at one size in both halves, and (when laid out) in one place.

Run length: the default ("ci") profile is derandomized and small (~10 s on 2 cores);
`BACKWARD_TWICE_FUZZ=long` explores far more (random seeds, 3,000 examples),
`BACKWARD_TWICE_FUZZ=<number>` sets the number of examples.
"""
from __future__ import annotations

import collections
import contextlib
import copy
import html
import os
import re
import signal
import warnings

import pytest
import torch
from autograd_programs import Square, node_places
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch import nn

from backward_twice import render
from backward_twice.graph import compare, describe, draw, watch
from backward_twice.modules import record_modules
from backward_twice.render import far_leaf_uses, folded_transposes
from backward_twice.snapshot import GraphInputError, SavedState
from backward_twice.trace import BackwardTrace
from backward_twice.walk import snapshot

_common = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
               print_blob=True)
settings.register_profile("bt-ci", max_examples=200, derandomize=True, database=None, **_common)
settings.register_profile("bt-long", max_examples=3000, **_common)
_mode = os.environ.get("BACKWARD_TWICE_FUZZ", "ci")
if _mode.isdigit():
    settings.register_profile("bt-n", max_examples=int(_mode), **_common)
    FUZZ = settings.get_profile("bt-n")
else:
    FUZZ = settings.get_profile("bt-long" if _mode == "long" else "bt-ci")

EXAMPLE_TIMEOUT_S = 20   # a hang is a failure, not a stuck CI run
STATS = collections.Counter()


@contextlib.contextmanager
def time_limit(seconds):
    """Raise TimeoutError in the main thread after `seconds` (POSIX timers)."""
    if not hasattr(signal, "setitimer"):
        yield
        return

    def on_alarm(signum, frame):
        raise TimeoutError(f"renderer example took more than {seconds} s")

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


# ------------------------------------------------------------------ custom Functions


class SaveOutput(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        y = x.exp()
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * y


class SaveNothing(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.scale = 3.0            # a non-tensor on ctx: not a saved tensor
        return x * 3.0

    @staticmethod
    def backward(ctx, g):
        return g * ctx.scale


class TwoOutputs(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return x + y, x * y

    @staticmethod
    def backward(ctx, ga, gb):
        x, y = ctx.saved_tensors
        return ga + gb * y, ga + gb * x


# ------------------------------------------------------------------ random programs
SHAPES = [(2, 3), (3,), (), (2, 1)]
UNARY = ["exp", "tanh", "sin", "sigmoid", "relu", "pow2", "mul_const", "add_const", "neg", "sum",
         "mean", "clone", "square_fn", "exp_fn", "scale_fn", "linear"]
VIEWS = ["t", "flat", "slice", "unsqueeze", "expand", "select"]
MULTI = ["unbind", "split", "max_dim", "two_fn"]
BINARY = ["add", "mul", "div", "where", "matmul_like", "cat"]
INPLACE = ["mul_", "add_", "view_mul_", "exp_"]
OTHER = ["detach", "detach_leaf", "no_grad", "tensor_hook", "node_hook", "prehook",
         "saved_hooks", "const"]
OPS = UNARY + VIEWS + MULTI + BINARY + INPLACE + OTHER


def _linear(a, k):
    """An nn.Linear-style layer with a new weight leaf (and a bias when k is odd): the weight's
    transpose is a TBackward0 of a leaf."""
    a = a.reshape(1, 1) if a.dim() == 0 else a
    w = torch.randn(2, a.shape[-1], requires_grad=True)
    return torch.nn.functional.linear(a, w, torch.zeros(2, requires_grad=True) if k % 2 else None)


def _combine(a, b):
    """Broadcast-safe pair: same shape, or b reduced to a scalar."""
    return (a, b) if a.shape == b.shape else (a, b.sum())


# One-expression ops: op -> f(a, b, k) returning the new tensors.
SIMPLE = {
    "exp": lambda a, b, k: [a.exp()],
    "tanh": lambda a, b, k: [a.tanh()],
    "sin": lambda a, b, k: [a.sin()],
    "sigmoid": lambda a, b, k: [torch.sigmoid(a)],
    "relu": lambda a, b, k: [torch.relu(a)],
    "pow2": lambda a, b, k: [a ** 2],
    "mul_const": lambda a, b, k: [a * (k + 1.5)],
    "add_const": lambda a, b, k: [a + k],
    "neg": lambda a, b, k: [-a],
    "sum": lambda a, b, k: [a.sum()],
    "mean": lambda a, b, k: [a.mean()],
    "clone": lambda a, b, k: [a.clone()],
    "square_fn": lambda a, b, k: [Square.apply(a)],
    "exp_fn": lambda a, b, k: [SaveOutput.apply(a)],
    "scale_fn": lambda a, b, k: [SaveNothing.apply(a)],
    "linear": lambda a, b, k: [_linear(a, k)],
    "t": lambda a, b, k: [a.t()] if a.dim() == 2 else [a.view(-1)],
    "flat": lambda a, b, k: [a.reshape(-1)],
    "slice": lambda a, b, k: [a[..., :1]] if a.dim() else [a.unsqueeze(0)],
    "unsqueeze": lambda a, b, k: [a.unsqueeze(0)],
    "expand": lambda a, b, k: [a.unsqueeze(0).expand(2, *a.shape)],
    "select": lambda a, b, k: [a[0]] if a.dim() and a.shape[0] > 0 else [a * 1],
    "unbind": lambda a, b, k: list(a.unbind(0))[:2] if a.dim() else [a * 2],
    "split": lambda a, b, k: list(a.reshape(-1).split(1))[:3] if a.numel() > 1 else [a + 1],
    "matmul_like": lambda a, b, k: [a.reshape(-1, 1) @ b.reshape(1, -1)],
    "cat": lambda a, b, k: [torch.cat([a.reshape(-1), b.reshape(-1)])],
    "detach": lambda a, b, k: [a.detach() * 2],                          # a constant: in no graph
    "detach_leaf": lambda a, b, k: [a.detach().clone().requires_grad_()],  # a new leaf
    "const": lambda a, b, k: [torch.full(a.shape, float(k))],
}
# Two-operand ops on a broadcast-safe pair (_combine): op -> f(x, y).
PAIRWISE = {
    "add": lambda x, y: [x + y],
    "mul": lambda x, y: [x * y],
    "div": lambda x, y: [x / (y.abs() + 1)],
    "where": lambda x, y: [torch.where(x > 0, x, y)],
    "two_fn": lambda x, y: list(TwoOutputs.apply(x, y + 0)),
}

IN_PLACE = {"mul_": lambda c: c.mul_(2.0), "add_": lambda c: c.add_(1.0), "exp_": lambda c: c.exp_()}


def apply_op(op, a, b, k):
    """Run one op on pool tensors a, b; return a list of new tensors (maybe empty)."""
    if op in SIMPLE:
        return SIMPLE[op](a, b, k)
    if op in PAIRWISE:
        return PAIRWISE[op](*_combine(a, b))
    if op == "max_dim":
        if a.dim() == 0:
            return [a.clone()]
        values, indices = a.max(dim=0)
        return [values]
    if op in IN_PLACE:            # on a fresh non-leaf (never on a leaf): may invalidate saved tensors
        return [IN_PLACE[op](a * 1 if a.is_leaf else a)]
    if op == "view_mul_":
        c = a.clone() if a.dim() else a.reshape(1).clone()
        c[0:1].mul_(3.0)            # in-place on a view: CopySlices
        return [c]
    if op == "no_grad":
        with torch.no_grad():
            c = a * 2
        return [c + b.sum()]      # mixes a constant with the graph of b
    if op == "tensor_hook":
        c = a * 1
        if c.requires_grad:
            c.register_hook(lambda g: g * 1)
        return [c]
    if op == "node_hook":
        c = a * 1.0
        if c.grad_fn is not None:
            c.grad_fn.register_hook(lambda gi, go: None)
        return [c]
    if op == "prehook":
        c = a + 0.5
        if c.grad_fn is not None:
            c.grad_fn.register_prehook(lambda go: None)
        return [c]
    if op == "saved_hooks":
        with torch.autograd.graph.saved_tensors_hooks(lambda t: t.clone(), lambda t: t):
            return [a.sin() * b.sum()]
    raise AssertionError(op)


# Layers: programs built mostly of Linear layers and transposes, so folded TBackward0 edges
# (and their ran marks, references and same-size pairs) are met in every run.
LAYERS = ["linear", "linear", "t", "tanh", "relu", "add", "mul", "sum", "matmul_like", "mul_", "detach",
          "node_hook"]


@st.composite
def programs(draw_, vocabulary=OPS):
    n_leaves = draw_(st.integers(1, 3))
    leaves = []
    for i in range(n_leaves):
        shape = draw_(st.sampled_from(SHAPES))
        grad = draw_(st.booleans()) if i else True   # the first one always requires grad
        leaves.append((shape, grad))
    steps = draw_(st.lists(st.tuples(st.sampled_from(vocabulary), st.integers(0, 50), st.integers(0, 50),
                                     st.integers(0, 3)), min_size=1, max_size=12))
    n_roots = draw_(st.integers(1, 2))
    root_picks = draw_(st.lists(st.integers(0, 50), min_size=n_roots, max_size=n_roots))
    name_picks = draw_(st.lists(st.tuples(st.integers(0, 50),
                                          st.text(alphabet='ab<>{}"\'&;/ \\né', min_size=1,
                                                  max_size=6)), max_size=4))
    retain = draw_(st.booleans())
    second = draw_(st.sampled_from(["none", "again", "retained-again"]))
    svg = draw_(st.integers(0, 3)) == 0   # lay out one picture in four (Graphviz is the slow part)
    cap = draw_(st.sampled_from([None, None, 1, 3, 8]))
    focus = draw_(st.one_of(st.none(), st.integers(0, 50)))
    return dict(leaves=leaves, steps=steps, roots=root_picks, names=name_picks, retain=retain,
                second=second, cap=cap, svg=svg, focus=focus)


def run_program(p):
    torch.manual_seed(0)
    pool = [torch.randn(*shape, requires_grad=g) if shape else torch.randn((), requires_grad=g)
            for shape, g in p["leaves"]]
    for op, i, j, k in p["steps"]:
        a, b = pool[i % len(pool)], pool[j % len(pool)]
        try:
            out = apply_op(op, a, b, k)
        except RuntimeError as err:   # e.g. an in-place op torch refuses: not a renderer matter
            STATS["op refused by torch: " + str(err).split(":")[0][:40]] += 1
            continue
        pool.extend(t for t in out if isinstance(t, torch.Tensor))
    readable = []
    for t in pool:
        try:
            _ = t.grad_fn
            readable.append(t)
        except RuntimeError:   # a multi-output view whose base changed in place: torch refuses
            STATS["grad_fn unreadable (see test_bad_inputs)"] += 1
    pool = readable
    graphed = [t for t in pool if t.grad_fn is not None or t.requires_grad]
    roots = []
    for r in p["roots"]:
        t = graphed[r % len(graphed)]
        if not any(t is x for x in roots):
            roots.append(t)
    names = {}
    for i, name in p["names"]:
        names[name] = pool[i % len(pool)]
    return pool, roots, names


# ------------------------------------------------------------------ independent checks
def reachable(roots):
    """(op-name multiset, set of leaf ids, node count) by walking next_functions ourselves."""
    seen, ops, leaves = set(), collections.Counter(), set()
    stack = [t.grad_fn for t in roots if t.grad_fn is not None]
    for t in roots:
        if t.grad_fn is None and t.requires_grad:
            leaves.add(id(t))
    while stack:
        fn = stack.pop()
        if fn in seen:
            continue
        seen.add(fn)
        if hasattr(fn, "variable"):
            leaves.add(id(fn.variable))
        else:
            ops[fn.name()] += 1
        stack.extend(n for n, _ in fn.next_functions if n is not None)
    return ops, leaves, seen


def true_saved_states(fns):
    """Multiset of (op name, held slots, unreadable slots+state) per node, by reading every
    `_saved_*` attribute ourselves (`saved_tensors` for a custom Function)."""
    out = collections.Counter()
    for fn in fns:
        if hasattr(fn, "variable"):
            continue
        attrs = [a for a in dir(fn) if a.startswith("_saved_")]
        if not attrs and "saved_tensors" in dir(fn):
            attrs = ["saved_tensors"]
        held, unread = [], set()
        for attr in attrs:
            slot = attr[len("_saved_"):] if attr.startswith("_saved_") else attr
            try:
                value = getattr(fn, attr)
            except Exception as err:   # reading really raises: freed (or changed in place)
                text = str(err)
                state = ("freed" if "freed" in text or "second time" in text else
                         "modified" if "modified by an inplace operation" in text else "unreadable")
                unread.add((slot, state))
                continue
            if isinstance(value, torch.Tensor):
                held.append(slot)
            elif isinstance(value, (tuple, list)):
                held.extend(f"{slot}[{i}]" for i, v in enumerate(value) if isinstance(v, torch.Tensor))
        out[(fn.name(), tuple(sorted(held)), tuple(sorted(unread)))] += 1
    return out


def shown_saved_states(snap):
    """The same multiset, from what the snapshot shows."""
    out = collections.Counter()
    for op in snap.ops.values():
        held = sorted(s.slot for s in op.saved if s.is_tensor and s.state == "held" and not s.modified)
        unread = sorted({(s.slot.split("[")[0], "modified" if s.modified else s.state) for s in op.saved
                         if s.is_tensor and (s.state != "held" or s.modified)})
        out[(op.name, tuple(held), tuple(unread))] += 1
    return out


def transposes_to_fold(roots, names, fns):
    """How many TBackward0 nodes a picture must draw as edges, from next_functions alone: one
    input (a leaf's AccumulateGrad or another op); one op using it; not the grad_fn of a tensor
    drawn as a box (a root or a named tensor)."""
    users = collections.defaultdict(set)
    for fn in fns:
        for n, _ in fn.next_functions:
            if n is not None:
                users[n].add(fn)
    boxed = {t.grad_fn for t in [*roots, *names.values()] if t.grad_fn is not None}
    count = 0
    for fn in fns:
        inputs = [n for n, _ in fn.next_functions if n is not None]
        if (fn.name() == "TBackward0" and fn not in boxed and len(users[fn]) == 1
                and len(inputs) == 1):
            count += 1
    return count


def check_picture(roots, names, cap, svg=False):
    kw = {} if cap is None else {"max_nodes": cap}
    snap = snapshot(*roots, names=names, **kw)
    ops, leaves, fns = reachable(roots)
    total = sum(ops.values()) + len(leaves)
    drawn_leaves = [t for t in snap.tensors.values() if t.role == "leaf"]
    if not snap.truncated:
        assert collections.Counter(op.name for op in snap.ops.values()) == ops
        assert len(drawn_leaves) == len(leaves)
        assert snap.total_nodes == total
        assert shown_saved_states(snap) == true_saved_states(fns)
        for a, b in snap.edges:     # every edge joins drawn nodes
            assert (a in snap.ops or a in snap.tensors) and (b in snap.ops or b in snap.tensors)
    else:
        assert cap is not None and len(snap.ops) + len(drawn_leaves) <= cap
        assert snap.total_nodes == total and not snap.count_capped
        assert set(op.name for op in snap.ops.values()) <= set(ops)
        STATS["capped pictures"] += 1
    pic = draw(*roots, names=names, **kw)
    assert pic.text == describe(snap) and draw(*roots, names=names, **kw).text == pic.text
    assert " at 0x" not in pic.text and "<script" not in pic.dot
    for box in snap.tensors.values():     # every name is in the DOT, escaped (reference: html)
        # (backslashes doubled: Graphviz reads \\N in a label as the node's name)
        safe = html.escape(box.name, quote=True).replace("{", "&#123;").replace("}", "&#125;").replace("\\", "\\\\")
        assert f"<B>{safe}</B>" in pic.dot
    shared = snap.shared_buffers()  # one buffer, several slots: marked on each, counted once
    u, b = snap.unique_bytes_by_state(), snap.bytes_by_state()
    assert all(0 <= u[k] <= b[k] for k in b) and (u == b) == (not shared)
    assert pic.dot.count("<I>shared buffer</I>") == sum(len(v) for v in shared.values())
    STATS["shared buffers"] += len(shared)
    folded = folded_transposes(snap)   # TBackward0 of a leaf, one user: an edge marked .T
    if not snap.truncated:
        assert len(folded) == transposes_to_fold(roots, names, fns)
    transposes = sum(op.name == "TBackward0" for op in snap.ops.values())
    assert pic.dot.count("TBackward0</B>") == transposes - len(folded)
    assert len(re.findall(r" -> \w+ \[[^\n]*\bxlabel=", pic.dot)) == len(folded) and pic.text.count(" TBackward0(") == transposes
    assert (".T: used transposed" in pic.dot) == bool(folded)
    for t, (leaf, user) in folded.items():
        assert f"\t{t} [" not in pic.dot and f" -> {t}" not in pic.dot and f"\t{t} -> " not in pic.dot
        assert re.search(rf"\t{leaf}(_to_{t})? -> {user} \[[^\n]*\bxlabel=", pic.dot)
    STATS["folded transposes"] += len(folded)
    refs = far_leaf_uses(snap)     # far uses of a shared leaf: one reference box each, no edge
    assert pic.dot.count("same leaf</FONT>") == len(refs)
    for leaf, op in refs:
        tail = f"\t{leaf}_to_{op} -> {folded[op][1] if op in folded else op}"
        assert f"\t{leaf} -> {op}\n" not in pic.dot and tail in pic.dot
    if svg:
        assert pic.svg.count('class="node"') == (len(snap.ops) + len(snap.tensors) + snap.truncated
                                                 + len(refs) - len(folded))
        STATS["laid out as SVG"] += 1
    STATS["pictures"] += 1
    for _, s in snap.saved_tensors():
        STATS["saved " + ("modified in place" if s.modified else s.state)] += 1
    return pic


def check_focus(roots, names, focus, cap):
    """draw(..., focus=t): exactly the nodes under t (checked by walking next_functions here),
    the rest counted as between (t is reached from them) or beside; a t outside the graph is a
    clear GraphInputError."""
    kw = {} if cap is None else {"max_nodes": cap}
    _, _, fns = reachable(roots)
    node = focus.grad_fn if focus.grad_fn is not None else next(
        (fn for fn in fns if hasattr(fn, "variable") and fn.variable is focus), None)
    in_graph = node is not None and node in fns or any(focus is r for r in roots)
    if not in_graph:
        with pytest.raises(GraphInputError, match="is not in the graph behind"):
            snapshot(*roots, names=names, focus=focus, **kw)
        STATS["focus outside the graph"] += 1
        return
    snap = snapshot(*roots, names=names, focus=focus, **kw)
    under = set() if node is None else reachable_from(node)      # None: a leaf root no op uses
    ops = collections.Counter(fn.name() for fn in under if not hasattr(fn, "variable"))
    leaves = {id(fn.variable) for fn in under if hasattr(fn, "variable")} | ({id(focus)} if node is None else set())
    if not snap.truncated:
        assert collections.Counter(op.name for op in snap.ops.values()) == ops
        assert snap.leaf_count == len(leaves)
    assert snap.total_nodes == (len(under) if node is not None else 1)   # drawn + beyond the cap
    rest = fns - under
    above = snap.above
    if not rest and not any(r is not focus and r.grad_fn is None and id(r) not in leaves for r in roots):
        assert above is None
    else:
        between = sum(1 for fn in rest if node is not None and node in reachable_from(fn))
        lone = [r for r in roots if r.grad_fn is None and r is not focus         # leaf roots no op uses
                and not any(hasattr(fn, "variable") and fn.variable is r for fn in fns)]
        assert above is not None and above.between == between and not above.capped
        assert above.between + above.beside == len(rest) + len(lone)
        assert f"focus on {', '.join(above.focus)}: NOT DRAWN: {above.headline()}" in describe(snap)
    STATS["focus pictures"] += 1


def reachable_from(fn):
    seen, stack = set(), [fn]
    while stack:
        f = stack.pop()
        if f not in seen:
            seen.add(f)
            stack.extend(n for n, _ in f.next_functions if n is not None)
    return seen


def by_rank(marks: dict) -> dict:
    """{id: (k, ...)} renumbered 1, 2, ... in the order of k: a trace of every node numbers a
    drawn node among all that ran; watch() among the drawn ones."""
    rank = {k: r for r, k in enumerate(sorted(k for ks in marks.values() for k in ks), 1)}
    return {i: tuple(rank[k] for k in ks) for i, ks in marks.items()}


def check_ran_marks(w):
    """The 'after' picture of watch() marks the nodes the backward call ran: only drawn nodes,
    every op whose saved tensors that call freed among them (only a node that ran frees its
    own), numbered 1, 2, ... in the order of the text's 'backward ran' line."""
    ran = w.picture.ran
    assert set(ran) <= set(w.after.ops) | set(w.after.tensors)
    for op, _ in w.after.freed_since(w.before):
        assert op.id in ran, f"{op.id} {op.name} freed its saved tensors but is not marked as ran"
    orders = sorted(k for ks in ran.values() for k in ks)
    assert orders == sorted(set(orders)) and (not orders or orders[0] >= 1)
    folded = folded_transposes(w.after)
    assert ("ran #" in w.picture.dot) == bool(set(ran) - set(folded))
    for t in set(folded) & set(ran):            # a folded transpose that ran: '.T #k' on its edge
        assert f"<B>.T #{', #'.join(map(str, ran[t][:3]))}</B>" in w.picture.dot
    assert "backward ran" in w.picture.text
    STATS["ran marks checked"] += 1


def check_same_places(w, svg):
    """A watch() pair: each node both halves draw alike (same id, same op or tensor) gets one size
    in both; laid out, it sits at one place in its cluster (side by side) or picture (stacked)."""
    pic = w.picture
    kind = {**{i: op.name for i, op in w.after.ops.items()}, **{i: t.name for i, t in w.after.tensors.items()}}
    same = {i for i, op in w.before.ops.items() if kind.get(i) == op.name}
    same |= {i for i, t in w.before.tensors.items() if kind.get(i) == t.name}
    size = re.compile(r'\t\t?([LR])_(\w+) \[label=<<TABLE WIDTH="(\d+)" HEIGHT="(\d+)"')
    marks = render.Marks(ran=pic.ran)
    side = pic.dot if not (pic.stacked or pic.simplified) else render.pair_dot(  # the pair's own
        w.before, w.after, marks=marks, sizes=render.pair_sizes(w.before, w.after, marks=marks))
    sizes = {}
    for half, nid, width, height in size.findall(side):
        sizes.setdefault(nid, {})[half] = (width, height)
    for nid in same - set(folded_transposes(w.after)):
        assert nid in sizes and sizes[nid]["L"] == sizes[nid]["R"], nid
    STATS["pairs sized alike"] += 1
    drawn = set(w.after.ops) | set(w.after.tensors)
    if svg and same == drawn == set(w.before.ops) | set(w.before.tensors):
        top, bottom = (node_places(d) for d in pic.alternative[:2])
        assert top == bottom
        STATS["pairs laid out alike"] += 1


def _no_drill(text):
    """A module picture's text without the line saying where to focus next (issue 28: only a picture
    drawn with totals only, or fewer nodes, says it; the rest of the text is the same)."""
    return "\n".join(line for line in text.splitlines() if not line.startswith("focus next: "))


@FUZZ
@given(programs())
def test_renderer_on_random_programs(p):
    run_example(p)


@settings(FUZZ, max_examples=max(20, FUZZ.max_examples // 4))
@given(programs(LAYERS))
def test_renderer_on_programs_of_layers(p):
    run_example(p)


def run_example(p):
    STATS["examples"] += 1
    with warnings.catch_warnings(), time_limit(EXAMPLE_TIMEOUT_S):
        warnings.simplefilter("ignore")
        pool, roots, names = run_program(p)
        check_picture(roots, names, p["cap"], svg=p["svg"])
        graphed = [t for t in pool if t.grad_fn is not None or t.requires_grad]
        focus = None if p["focus"] is None else graphed[p["focus"] % len(graphed)]
        if focus is not None:
            check_focus(roots, names, focus, p["cap"])
        loss = sum(r.sum() for r in roots if r.requires_grad)
        if not isinstance(loss, torch.Tensor) or loss.grad_fn is None:
            STATS["no backward possible"] += 1
            return
        kw = {} if p["cap"] is None else {"max_nodes": p["cap"]}
        try:
            with watch(*roots, names=names, **kw) as w, BackwardTrace(*roots, keep_grads=False) as tr:
                loss.backward(retain_graph=p["retain"])
            STATS["backward ok"] += 1
        except RuntimeError as err:   # e.g. a saved tensor changed in place: the picture says so
            STATS["backward raised: " + str(err)[:30]] += 1
        check_ran_marks(w)
        check_same_places(w, p["svg"])
        # compare(trace=) with a trace of every node marks what watch marks, in the same order:
        # watch hooks only the drawn nodes, so it numbers them among themselves
        assert by_rank(compare(w.before, w.after, trace=tr).ran) == w.picture.ran
        STATS["compare(trace=) checked"] += 1
        if w.raised is None and "not recorded" not in w.picture.text:   # how many ran, as a full trace counts
            said = re.search(r"backward ran (no|[\d,]+) node", w.picture.text)
            assert said, w.picture.text
            assert (0 if said[1] == "no" else int(said[1].replace(",", ""))) == len(tr.ran_order()), w.picture.text
        check_picture(roots, names, p["cap"], svg=p["svg"])
        if p["second"] != "none":
            try:
                loss.backward(retain_graph=p["second"] == "retained-again")
                STATS["second backward ok"] += 1
            except RuntimeError:
                STATS["second backward raised"] += 1
            check_picture(roots, names, p["cap"])


@pytest.fixture(scope="module", autouse=True)
def report_statistics():
    """Not a check: prints what the fuzzer exercised (shown with pytest -s)."""
    yield
    if STATS:
        print("\nfuzz statistics:", dict(sorted(STATS.items())))


@pytest.mark.parametrize("op", OPS)
def test_every_op_runs(op):
    """Each op of the fuzzer's vocabulary really builds something (no dead vocabulary)."""
    a = torch.randn(2, 3, requires_grad=True)
    b = torch.randn(2, 3, requires_grad=True)
    out = apply_op(op, a * 1, b, 1)
    assert out and all(isinstance(t, torch.Tensor) for t in out)


# ------------------------------------------------------------------ random models: draw(modules=)
class _Residual(nn.Module):
    def __init__(self, body):
        super().__init__()
        self.body = body

    def forward(self, x):
        return x + self.body(x)


class _TwoHeads(nn.Module):
    def __init__(self, left, right):
        super().__init__()
        self.left, self.right = left, right

    def forward(self, x):
        return self.left(x) * self.right(x)


MODULE_LAYERS = ["linear", "relu", "tanh", "sigmoid", "linear_nobias"]


def layer_specs(depth=2):
    leaf = st.sampled_from(MODULE_LAYERS)
    if depth == 0:
        return leaf
    inner = st.lists(layer_specs(depth - 1), min_size=1, max_size=3)
    return st.one_of(leaf, st.tuples(st.sampled_from(["seq", "res", "repeat"]), inner),
                     st.tuples(st.just("heads"), inner, inner))


def build(spec, width=4):
    if spec == "linear":
        return nn.Linear(width, width)
    if spec == "linear_nobias":
        return nn.Linear(width, width, bias=False)
    if isinstance(spec, str):
        return {"relu": nn.ReLU, "tanh": nn.Tanh, "sigmoid": nn.Sigmoid}[spec]()
    kind, *parts = spec
    body = [nn.Sequential(*[build(s, width) for s in p]) for p in parts]
    if kind == "seq":
        return body[0]
    if kind == "res":
        return _Residual(body[0])
    if kind == "repeat":        # three identical blocks in a row: a run
        return nn.Sequential(*[copy.deepcopy(body[0]) for _ in range(3)])
    return _TwoHeads(*body)


BOX_TOTALS = re.compile(r'BGCOLOR="#f4f6f8" STYLE="rounded"><TR><TD COLSPAN="2" ALIGN="LEFT"><B>[^<]*</B></TD></TR>'
                        r'<TR><TD COLSPAN="2" ALIGN="LEFT"><FONT POINT-SIZE="10">(?:each: \d+ saved, as listed; '
                        r'all \d+: )?(\d+) saved')
DRAWN_SAVED = re.compile(r">(?:<S>)?saved (?!tensor)|<B>HELD</B> ")


@settings(FUZZ, max_examples=max(1, FUZZ.max_examples // 4))   # four pictures an example
@given(st.lists(layer_specs(), min_size=1, max_size=4), st.sampled_from(["none", "one", "both"]),
       st.sampled_from([None, 25]), st.booleans(), st.booleans())
def test_module_pictures_of_random_models(specs, backward, cap, svg, repeated):
    """draw(loss, modules=model) on random nets (Sequential, residual blocks, two heads, runs of
    identical blocks, the model itself three identical blocks), before and after a backward
    through one loss or both: both forms draw, their text is the same, and the overview shows
    every saved tensor once: in one module box's count or as a row of an op drawn outside them."""
    STATS["module examples"] += 1
    torch.manual_seed(0)
    net = build(("repeat", specs) if repeated else ("seq", specs))   # repeated: 3 identical blocks
    x = torch.randn(3, 4, requires_grad=True)
    with warnings.catch_warnings(), time_limit(EXAMPLE_TIMEOUT_S):
        warnings.simplefilter("ignore")
        with record_modules(net):
            out = net(x)
        roots = [out[:, :2].pow(2).sum(), out[:, 2:].exp().sum()]
        kw = {} if cap is None else {"max_nodes": cap}
        draw(*roots, modules=net, **kw)                # a walk before backward records the sizes
        if backward != "none":
            roots[0].backward(retain_graph=backward == "both")
            if backward == "both":
                roots[1].backward()
        ops = draw(*roots, modules=net, expand=True, **kw)
        calls = draw(*roots, modules=net, expand=[], **kw)
        auto = draw(*roots, modules=net, **kw)
        cut = "more nodes not drawn" in calls.dot      # past the cap with no run to collapse: cut as draw()
        snap = snapshot(*roots, names=dict(net.named_parameters()), max_nodes=cap if cut else 5000)
        STATS["module pictures cut at the cap"] += cut
        assert _no_drill(ops.text) == _no_drill(calls.text) == _no_drill(auto.text) and " at 0x" not in calls.text
        assert ops.form == "ops" and calls.form == "calls"
        if 'STYLE="rounded,dashed"' not in calls.dot:    # no run box of the capped op picture in it
            boxed = sum(int(n) for n in BOX_TOTALS.findall(calls.dot))
            drawn = len(DRAWN_SAVED.findall(calls.dot))
            assert boxed + drawn == sum(1 for _ in snap.saved_tensors())
            STATS["module overviews counted"] += 1
        invisible = re.compile(r"\t\w+ -> \w+ \[style=invis\]\n")   # stacking branches adds only these
        assert invisible.sub("", calls.overview(True)) == invisible.sub("", calls.overview(False))
        freed = any(s.state is SavedState.FREED for _, s in snap.saved_tensors())
        assert ("<B>FREED</B>" in calls.dot) == freed
        STATS["module overviews with FREED"] += freed
        STATS["module overviews with a run of blocks"] += "&#215;" in calls.dot
        if svg:
            assert "<svg" in auto.svg and auto.form in ("ops", "calls")
            STATS["module pictures laid out"] += 1


# ------------------------------------------------------------------ options that compose (issue 18 §3)
OPTION_NAMES = ("names", "title", "max_nodes", "modules", "focus", "expand")


@settings(FUZZ, max_examples=max(1, FUZZ.max_examples // 4))
@given(st.lists(layer_specs(), min_size=1, max_size=3), st.sets(st.sampled_from(OPTION_NAMES)),
       st.sampled_from([3, 12, 300]), st.sampled_from([True, [], "first"]), st.booleans())
def test_draw_takes_every_combination_of_its_options(specs, chosen, cap, expand, after_backward):
    """Random nets drawn with a random subset of draw()'s six options: every combination draws
    (text and DOT, no layout: the fuzzer stays cheap), except expand= module paths without modules=, refused
    with its reason. focus= with modules= counts what lies above the focus in one box."""
    STATS["option examples"] += 1
    torch.manual_seed(0)
    net = build(("seq", specs))
    x = torch.randn(3, 4, requires_grad=True)
    with warnings.catch_warnings(), time_limit(EXAMPLE_TIMEOUT_S):
        warnings.simplefilter("ignore")
        with record_modules(net):
            mid = net(x)
            loss = (mid * 2).pow(2).sum()
        if after_backward:
            loss.backward(retain_graph=True)
        first = next(iter(dict(net.named_children())), None)
        kw = {"names": {"x": x, "loss": loss}, "title": "t <&>", "max_nodes": cap, "modules": net,
              "focus": mid, "expand": ([first] if first is not None else []) if expand == "first" else expand}
        kw = {k: v for k, v in kw.items() if k in chosen}
        if "expand" in kw and "modules" not in kw and kw["expand"] is not True:
            with pytest.raises(GraphInputError, match="expand= opens module calls: it needs modules="):
                draw(loss, **kw)
            STATS["option combinations refused (expand without modules)"] += 1
            return
        pic = draw(loss, **kw)
        assert pic.text and " at 0x" not in pic.text and "digraph" in pic.dot
        if "title" in kw:
            assert pic.text.startswith("t <&>") and "t &lt;&amp;&gt;" in pic.dot and "t <&>" not in pic.dot
        if "focus" in kw and mid.grad_fn is not None:
            assert "not drawn here, only counted" in pic.dot and pic.text.count("focus on") == 1
        STATS["option combination drawn: " + "+".join(sorted(kw)) if len(kw) <= 1 else "option combinations drawn"] += 1


# ------------------------------------------------------------------ every pair of options under the cap (issue 28 §3)
PAIRED_OPTIONS = ("names", "title", "focus", "hide_params", "watch")   # watch: the pair drawn by watch()
DRAWN_NODE = re.compile(r"^\t+(?:([LR])_)?(op\d+|leaf\d+) \[", re.M)    # a box of an op or a leaf, in the DOT


@settings(FUZZ, max_examples=max(20, FUZZ.max_examples // 2))
@given(programs(), st.sampled_from([(a, b) for i, a in enumerate(PAIRED_OPTIONS) for b in PAIRED_OPTIONS[i + 1:]]),
       st.integers(1, 10))
def test_every_pair_of_options_keeps_the_cap_counting_the_boxes_drawn(p, pair, cap):
    """Every pair of options with max_nodes=cap, on random programs: the boxes of ops and leaves in
    the DOT are never more than cap, and exactly min(cap, what the options let be drawn), counted
    independently (next_functions walked here): a node an option hides takes no room under the cap.
    hide_params draws no leaf but one given as a root or a focus, and the text names them."""
    STATS["option pairs: " + "+".join(pair)] += 1
    with warnings.catch_warnings(), time_limit(EXAMPLE_TIMEOUT_S):
        warnings.simplefilter("ignore")
        pool, roots, names = run_program(p)
        ops, leaves, seen = reachable(roots)
        in_graph = [t for t in pool if t.grad_fn in seen or (t.grad_fn is None and id(t) in leaves)]
        focus = in_graph[(p["focus"] or 0) % len(in_graph)]
        kw = {"max_nodes": cap}
        if "names" in pair:
            kw["names"] = names
        if "title" in pair:
            kw["title"] = 't <"\\{x}>'
        if "focus" in pair:
            kw["focus"] = focus
            ops, leaves, _ = reachable([focus])
        if "hide_params" in pair:
            kw["hide_params"] = True
        given = {id(t) for t in [*roots, *([focus] if "focus" in pair else [])] if t.grad_fn is None}
        shown_leaves = {i for i in leaves if i in given} if "hide_params" in pair else leaves
        drawable = sum(ops.values()) + len(shown_leaves)
        if "watch" in pair:
            loss = sum(r.sum() for r in roots if r.requires_grad)
            if not isinstance(loss, torch.Tensor) or loss.grad_fn is None:
                return
            kw.pop("names", None) if "names" not in pair else None
            with contextlib.suppress(RuntimeError), watch(*roots, **kw) as w:
                loss.backward()
            snaps, dot = {"L": w.before, "R": w.after}, w.picture.dot
        else:
            pic = draw(*roots, **kw)
            snaps, dot = {None: pic.snapshot}, pic.dot
        for side, snap in snaps.items():
            boxes = [nid for s, nid in DRAWN_NODE.findall(dot) if (s or None) == side]
            recorded = len(snap.ops) + snap.leaf_count
            assert len(boxes) <= cap and recorded == min(cap, drawable), (pair, cap, boxes, recorded, drawable)
            assert len(boxes) <= recorded      # a folded transpose is an edge, a folded run one box
            if "hide_params" in pair:
                assert {t.name for t in snap.tensors.values() if t.role == "leaf"} <= {
                    t.name for t in snap.tensors.values() if t.role == "leaf" and t.name in (
                        {n for n, v in names.items() if id(v) in given} | {"out", "out1", "out2", "focus"})}
                hidden = len(leaves) - len(shown_leaves)
                assert len(snap.params_hidden) + snap.hidden_by_type.get("leaf", 0) >= hidden
                if snap.params_hidden:
                    assert "hidden by hide_params=True" in (w.picture.text if "watch" in pair else pic.text)


# ------------------------------------------------------------------ a module focused on by path, with every option
MODULE_FOCUS_PAIRS = ("names", "title", "hide_params", "watch", "modules")


@settings(FUZZ, max_examples=max(20, FUZZ.max_examples // 4))
@given(st.lists(layer_specs(), min_size=1, max_size=3), st.integers(0, 50), st.sampled_from(MODULE_FOCUS_PAIRS),
       st.integers(1, 12), st.booleans())
def test_a_module_focus_with_every_other_option_keeps_the_cap_and_its_boundary(specs, which, other, cap, prefixed):
    """focus= a module path (issue 28 §1, drill-down), paired with each other option, with max_nodes=cap, on
    random nets: exactly min(cap, the ops made inside that module's calls and the leaves they use) boxes,
    counted here by walking next_functions and asking the recording who made each node; no op made outside
    it; what comes in from outside counted in one box, each node once (the outside box, the box above,
    the module: the whole graph). The model's name may lead the path."""
    STATS["module focus pairs: " + other] += 1
    torch.manual_seed(0)
    net = build(("seq", specs))
    x = torch.randn(3, 4, requires_grad=True)
    with warnings.catch_warnings(), time_limit(EXAMPLE_TIMEOUT_S):
        warnings.simplefilter("ignore")
        with record_modules(net) as rec:
            loss = net(x).pow(2).sum()
        paths = sorted({c.path for c in rec.call_by_key.values() if c.path})
        if not paths:
            return
        path = paths[which % len(paths)]
        scope = {c for c in rec.call_by_key.values() if c.path == path or c.path.startswith(path + ".")}
        _, _, every = reachable([loss])
        inside = [fn for fn in every if rec.owner(fn) in scope]
        used = {id(n.variable) for fn in inside for n, _ in fn.next_functions if hasattr(n, "variable")}
        if not inside:
            return
        kw = {"max_nodes": cap, "focus": f"net.{path}" if prefixed else path}
        if other == "names":
            kw["names"] = {"x": x, "loss": loss}
        elif other == "title":
            kw["title"] = 't <"\\{x}>'
        elif other == "hide_params":
            kw["hide_params"] = True
        drawable = len(inside) + (0 if other == "hide_params" else len(used))
        if other == "watch":
            with watch(loss, **kw) as w:
                loss.backward()
            snaps, dot, text = {"L": w.before, "R": w.after}, w.picture.dot, repr(w)
        elif other == "modules":
            pic = draw(loss, modules=net, expand=True, **kw)
            snaps, dot, text = {}, pic.dot, pic.text
            assert pic.snapshot.outside is None or pic.snapshot.outside.scope == path
            assert text.splitlines()[1].startswith(f"{path}: ")      # the module focused on is the outermost call
        else:
            pic = draw(loss, **kw)
            snaps, dot, text = {None: pic.snapshot}, pic.dot, pic.text
        for side, snap in snaps.items():
            boxes = [nid for s, nid in DRAWN_NODE.findall(dot) if (s or None) == side]
            recorded = len(snap.ops) + snap.leaf_count
            assert len(boxes) <= cap and recorded == min(cap, drawable), (path, other, cap, recorded, drawable)
            assert collections.Counter(op.name for op in snap.ops.values()) <= collections.Counter(
                fn.name() for fn in inside)                                         # no op made outside it
            out = snap.outside
            if out is not None:
                assert out.scope == path and "outside the module" in dot
                below = out.inputs + out.before
            else:
                below = 0
            above = 0 if snap.above is None else snap.above.between + snap.above.beside
            counted = snap.hidden_count + len(snap.params_hidden)       # beyond the cap, or hidden by an option
            assert recorded + counted + below + above == len(every), (path, other, cap)
        assert f"focus on {path}: NOT DRAWN: " in text       # the loss's own ops lie above every module
        STATS["module focus pictures"] += 1
