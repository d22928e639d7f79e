"""Walk an autograd graph and record what it holds, as plain data.

The walk is iterative (a 5,000-layer chain is fine), visits nodes in a
deterministic order (breadth-first from the roots, in the order given), and
never keeps the graph alive: a `Snapshot` holds names, shapes and states only.

A saved tensor is reported "freed" only when reading it really raises, which is
what `backward()` without `retain_graph=True` does to every tensor it saved.
"""
from __future__ import annotations

import re
from collections import Counter, deque
from collections.abc import Mapping
from dataclasses import dataclass, field

import torch

# Hard ceiling on how many nodes one walk touches (drawn + counted beyond the cap).
# Not only a time limit: in torch 2.13, once Python has touched the nodes of a chain
# deeper than ~45,000 (8 MB C stack), freeing that graph later overflows the C stack
# and kills the process (segfault). 20,000 stays well clear of that.
COUNT_LIMIT = 20_000


class GraphInputError(ValueError):
    """Raised for input the renderer cannot draw, with a message saying what to do."""


@dataclass(frozen=True)
class Saved:
    """One thing an op node saved for backward."""

    slot: str              # 'self', 'other', 'result', 'saved_tensors[0]', 'exponent', ...
    is_tensor: bool
    state: str             # 'held' or 'freed' for tensors ('unreadable' if reading it raised
                           # anything else), 'value' for non-tensors
    shape: tuple | None = None
    dtype: str | None = None
    nbytes: int | None = None
    alias: str | None = None   # a named tensor sharing this storage ('a', 'c', 'w.T', ...)
    value: str | None = None   # printed form of a non-tensor value
    modified: str | None = None  # held, but changed in place since saved: "version 1 -> 2"
    alias_view: bool = False   # True: same memory as `alias`, but another shape/stride/offset

    def alias_note(self) -> str:
        """'= a' (the named tensor itself, or 'a.T': its transpose), 'shares memory with a'
        (another view of the same memory)."""
        if not self.alias:
            return ""
        return f"shares memory with {self.alias}" if self.alias_view else f"= {self.alias}"

    def describe(self) -> str:
        if not self.is_tensor:
            return f"{self.slot} = {self.value}"
        stale = f" MODIFIED IN PLACE since saved ({self.modified})" if self.modified else ""
        if self.state == "unreadable":
            stale = f" (reading it raised {self.value})"
        if self.shape is None:
            return f"{self.slot}: size unknown{stale}"
        alias = f" ({self.alias_note()})" if self.alias else ""
        return f"{self.slot}{alias}: {fmt_shape(self.shape)} {self.dtype} {fmt_bytes(self.nbytes)}{stale}"


@dataclass
class Op:
    id: str
    name: str
    inputs: list = field(default_factory=list)    # ids of ops/leaves feeding this op
    saved: list = field(default_factory=list)
    produces: list = field(default_factory=list)  # names of named tensors it made


@dataclass
class TensorBox:
    id: str
    name: str
    role: str                  # 'leaf', 'output', 'intermediate'
    shape: tuple
    dtype: str
    requires_grad: bool
    retains_grad: bool
    grad: str | None           # formatted .grad, or None when there is none
    made_by: str | None = None  # op id for non-leaf tensors


@dataclass
class Snapshot:
    """Everything a picture of the graph needs, with no reference to the graph."""

    roots: list                 # names of the roots, in the order given
    ops: dict                   # id -> Op, in discovery order
    tensors: dict               # id -> TensorBox
    edges: list                 # (from_id, to_id): forward direction, input -> op -> output
    truncated: bool = False
    total_nodes: int = 0        # ops + leaves in the whole graph (up to COUNT_LIMIT)
    hidden_by_type: Counter = field(default_factory=Counter)
    count_capped: bool = False
    cut_at: list = field(default_factory=list)  # drawn op ids with inputs beyond the cap

    # -- summaries used by text, pictures, tests ---------------------------------
    def saved_tensors(self):
        for op in self.ops.values():
            for s in op.saved:
                if s.is_tensor:
                    yield op, s

    def bytes_by_state(self) -> dict:
        """{"held": bytes, "freed": bytes}, plus "unreadable" only when present."""
        out = {"held": 0, "freed": 0}
        for _, s in self.saved_tensors():
            out[s.state] = out.get(s.state, 0) + (s.nbytes or 0)
        return out

    def count_by_state(self) -> dict:
        """{"held": n, "freed": n}, plus "unreadable" only when present."""
        out = {"held": 0, "freed": 0}
        for _, s in self.saved_tensors():
            out[s.state] = out.get(s.state, 0) + 1
        return out

    # -- what changed since an earlier snapshot of the same graph ------------------
    def freed_since(self, earlier: "Snapshot") -> list:
        """[(op, saved)]: saved tensors held in `earlier` and freed now (matched by op id, slot)."""
        was = {(op.id, s.slot): s.state for op, s in earlier.saved_tensors()}
        return [(op, s) for op, s in self.saved_tensors()
                if s.state == "freed" and was.get((op.id, s.slot)) == "held"]

    def modified_since(self, earlier: "Snapshot") -> list:
        """[(op, saved)]: saved tensors changed in place that `earlier` did not show changed."""
        was = {(op.id, s.slot): s.modified for op, s in earlier.saved_tensors()}
        return [(op, s) for op, s in self.saved_tensors() if s.modified and not was.get((op.id, s.slot))]

    def grad_changes_since(self, earlier: "Snapshot") -> list:
        """['x.grad: None -> [2, 4]', ...] for leaves and retained tensors whose .grad changed."""
        was = {t.name: t.grad for t in earlier.tensors.values()}
        return [f"{t.name}.grad: {was.get(t.name)} -> {t.grad}" for t in self.tensors.values()
                if (t.role == "leaf" or t.retains_grad) and t.grad != was.get(t.name)]


# --------------------------------------------------------------------------------
# formatting of small values: deterministic by construction
def fmt_shape(shape) -> str:
    return "(" + ", ".join(str(int(d)) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def fmt_bytes(n) -> str:
    if n is None:
        return "? B"
    for unit, size in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


def fmt_number(v: float) -> str:
    v = float(v) + 0.0  # turns -0.0 into 0.0
    text = f"{v:.4g}"
    return "0" if text in ("-0", "0") else text


def fmt_values(t: torch.Tensor, max_values: int = 8) -> str:
    """Values of a small tensor, or its shape and norm when it is big."""
    t = t.detach()
    if t.numel() <= max_values:
        if t.dim() == 0:
            return fmt_number(t.item())
        flat = ", ".join(fmt_number(v) for v in t.reshape(-1).tolist())
        return f"[{flat}]" if t.dim() == 1 else f"[{flat}] {fmt_shape(t.shape)}"
    norm = t.double().norm().item() if t.is_floating_point() or t.is_complex() else float("nan")
    return f"{fmt_shape(t.shape)} norm {fmt_number(norm)}"


def _dtype_name(dtype) -> str:
    return str(dtype).replace("torch.", "")


# --------------------------------------------------------------------------------
_SAVED_ATTRS: dict = {}


def _saved_attr_names(fn) -> list:
    """The `_saved_*` properties of a node's class (cached per class)."""
    cls = type(fn)
    names = _SAVED_ATTRS.get(cls)
    if names is None:
        attrs = dir(fn)
        names = sorted(a for a in attrs if a.startswith("_saved_"))
        # custom autograd.Function. Not hasattr(): after backward, reading it raises
        # RuntimeError, which hasattr() does not catch.
        if "saved_tensors" in attrs and not names:
            names = ["saved_tensors"]
        _SAVED_ATTRS[cls] = names
    return names


def _is_freed_error(err: RuntimeError) -> bool:
    text = str(err)
    return "freed" in text or "backward through the graph a second time" in text


_VERSIONS = re.compile(r"is at version (\d+); expected version (\d+)")


def _modified_note(err: RuntimeError):
    """'version 1 -> 2' when reading a saved tensor failed because it was changed in place."""
    m = _VERSIONS.search(str(err))
    if "modified by an inplace operation" not in str(err) or m is None:
        return None
    return f"version {m.group(2)} -> {m.group(1)}"


def _unreadable_state(err: Exception) -> tuple:
    """(state, note) for a saved tensor whose reading raised `err`: ('held', 'version 0 -> 1')
    when it was changed in place since saved (still in memory; backward would raise),
    ('freed', None), or ('unreadable', what was raised)."""
    if isinstance(err, RuntimeError):
        if _is_freed_error(err):
            return "freed", None
        note = _modified_note(err)
        if note is not None:
            return "held", note
    first = str(err).strip().splitlines()[0] if str(err).strip() else ""
    note = type(err).__name__ + (": " + first[:60] + ("..." if len(first) > 60 else "") if first else "")
    return "unreadable", note


def _geometry(t):
    """How a tensor reads its memory: two tensors with the same storage and geometry are the
    same; None when it has no strides (sparse, ...) and only its storage is known."""
    try:
        return tuple(t.shape), t.stride(), t.storage_offset(), t.dtype
    except Exception:  # noqa: BLE001
        return None


def _is_transpose(g, h) -> bool:
    """Geometries g and h: the same 2-D memory, one read as the other's transpose."""
    return (g is not None and h is not None and len(g[0]) == 2 and g[0][::-1] == h[0]
            and g[1][::-1] == h[1] and g[2:] == h[2:])


def _tensor_saved(slot, t, storages) -> Saved:
    """A held saved tensor; named after a tensor the caller named if they share memory: '= a'
    when it is `a` seen the same way (shape, strides, offset, dtype), '= a.T' when it is a 2-D `a`
    transposed, else 'shares memory with a'."""
    named = storages.get(_storage_key(t), []) if storages else []
    alias, view = None, False
    if named:
        geometry = _geometry(t)
        same = [n for n, g in named if geometry is not None and g == geometry]
        same += [f"{n}.T" for n, g in named if _is_transpose(g, geometry)]   # Linear saves weight.T
        alias, view = (same[0], False) if same else (named[0][0], True)
    return Saved(slot=slot, is_tensor=True, state="held", shape=tuple(t.shape),
                 dtype=_dtype_name(t.dtype), nbytes=t.numel() * t.element_size(),
                 alias=alias, alias_view=view)


def _storage_key(t):
    try:
        st = t.untyped_storage()
        return st.data_ptr(), st.nbytes()
    except Exception:  # sparse or otherwise storage-less tensors
        return None


_META_KEY = "backward_twice.saved"


def _read_saved(fn, storages) -> list:
    """Everything `fn` saved, each marked held or freed.

    Sizes of a tensor seen held in an earlier walk are kept in the node's own
    `metadata` dict, so a picture drawn after backward still says how big the
    freed buffer was (and the record dies with the node).
    """
    try:
        known = fn.metadata.setdefault(_META_KEY, {})
    except (AttributeError, RuntimeError):
        known = {}
    out = []
    for attr in _saved_attr_names(fn):
        slot = attr[len("_saved_"):] if attr.startswith("_saved_") else attr
        try:
            value = getattr(fn, attr)
        except Exception as err:  # freed by backward, changed in place, or a saved-tensor hook failed
            state, note = _unreadable_state(err)
            prev = [s for k, s in known.items() if k == slot or k.startswith(slot + "[")]
            modified = note if state == "held" else None
            value = note if state == "unreadable" else None
            if prev:
                out.extend(Saved(p.slot, True, state, p.shape, p.dtype, p.nbytes, p.alias, value, modified, p.alias_view)
                           for p in prev)
            else:
                out.append(Saved(slot, True, state, value=value, modified=modified))
            continue
        if isinstance(value, torch.Tensor):
            out.append(_tensor_saved(slot, value, storages))
            known[slot] = out[-1]
        elif isinstance(value, (tuple, list)) and value and all(
                isinstance(v, torch.Tensor) or v is None for v in value):
            for i, v in enumerate(value):
                if v is not None:
                    out.append(_tensor_saved(f"{slot}[{i}]", v, storages))
                    known[out[-1].slot] = out[-1]
        elif value is None or (attr == "saved_tensors" and not value):
            continue  # optional input that was not needed, or a Function that saved nothing
        else:
            out.append(Saved(slot=slot, is_tensor=False, state="value", value=_fmt_value(value)))
    return out


def _fmt_value(v) -> str:
    if type(v) is int:  # the common case (sizes, strides, dims): skip the checks below
        return str(v)
    if isinstance(v, float):
        return fmt_number(v)
    if isinstance(v, (tuple, list)):
        if all(type(x) is int for x in v):
            inner = ", ".join(map(str, v))
        else:
            inner = ", ".join(_fmt_value(x) for x in v)
        return "(" + inner + ("," if len(v) == 1 else "") + ")"
    text = str(v)
    return text if len(text) <= 40 else text[:37] + "..."


# --------------------------------------------------------------------------------
def check_roots(roots, names) -> None:
    if not roots:
        raise GraphInputError(
            "draw() needs at least one tensor: call draw(loss), or draw(d, e, names={'d': d, 'e': e}).")
    for i, t in enumerate(roots, 1):
        if not isinstance(t, torch.Tensor):
            raise GraphInputError(_not_a_tensor(f"argument {i}", t))
        if _grad_fn(t, f"argument {i}") is None and not t.requires_grad:
            raise GraphInputError(
                f"argument {i} has no autograd graph: requires_grad=False and no grad_fn. "
                "Autograd only records operations on tensors that require grad. Create the inputs "
                "with requires_grad=True (or call x.requires_grad_()), make sure the computation "
                "is not inside torch.no_grad() or after .detach(), then compute it again.")
    if names is not None and not isinstance(names, Mapping):
        raise GraphInputError(f"names must be a dict {{name: tensor}}, like names={{'a': a, 'loss': loss}}; "
                              f"got a {type(names).__name__}.")
    for name, t in (names or {}).items():
        if not isinstance(name, str):
            raise GraphInputError(f"names must map a name (str) to a tensor; got key {name!r}.")
        if not isinstance(t, torch.Tensor):
            raise GraphInputError(_not_a_tensor(f"names[{name!r}]", t))
        _grad_fn(t, f"names[{name!r}]")


def check_max_nodes(max_nodes) -> None:
    if isinstance(max_nodes, bool) or not isinstance(max_nodes, int) or not 1 <= max_nodes <= COUNT_LIMIT:
        raise GraphInputError(f"max_nodes must be a whole number of nodes from 1 to {COUNT_LIMIT:,} "
                              f"(a bigger picture cannot be read or laid out); got {max_nodes!r}.")


def _grad_fn(t, where):
    """t.grad_fn, or a GraphInputError when torch refuses to give it (a multi-output view
    whose base was changed in place raises on .grad_fn)."""
    try:
        return t.grad_fn
    except RuntimeError as err:
        raise GraphInputError(f"{where}: torch refuses to read its grad_fn, so it has no graph to "
                              f"draw: {str(err).splitlines()[0]}") from None


def _not_a_tensor(where, obj) -> str:
    kind = "None" if obj is None else f"a {type(obj).__name__}"
    hint = "pass the tensor whose graph you want, for example draw(loss)."
    if obj is None:
        hint = "did a function return None instead of a tensor (a missing `return`)? " + hint
    elif type(obj).__module__.startswith("numpy"):
        hint = "convert it with torch.tensor(x, requires_grad=True) and compute with torch ops."
    elif isinstance(obj, torch.nn.Module):
        hint = "pass the model's output (or loss), not the model."
    elif isinstance(obj, (int, float)):
        hint = "a Python number has no graph: did you call .item() on the loss? Pass the tensor."
    elif isinstance(obj, (list, tuple)):
        hint = "pass the tensors one by one: draw(*outputs), or draw(outputs[0], outputs[1])."
    elif isinstance(obj, Mapping):
        hint = "names go in the keyword argument: draw(loss, names={'a': a, ...})."
    return f"{where} is {kind}, not a torch.Tensor: {hint}"


def snapshot(*roots, names=None, max_nodes=300) -> Snapshot:
    """Walk the graph behind `roots` (tensors) and record it."""
    return snapshot_with_ids(*roots, names=names, max_nodes=max_nodes)[0]


def snapshot_with_ids(*roots, names=None, max_nodes=300) -> tuple:
    """`snapshot(...)`, and {grad_fn: its id in the snapshot ('op3', 'leaf1')} for the nodes
    drawn: what the stepper needs to name live nodes. The dict holds references to the nodes,
    so keep it no longer than the graph itself."""
    check_roots(roots, names)
    check_max_nodes(max_nodes)
    names = dict(names or {})

    # Who is who: leaves and named non-leaf tensors, by identity.
    root_names = []
    for i, t in enumerate(roots):
        found = next((n for n, v in names.items() if v is t), None)
        if found is None:
            found = "out" if len(roots) == 1 else f"out{i + 1}"
            while found in names:  # never take over a name the caller gave another tensor
                found += "'"
            names[found] = t
        root_names.append(found)
    by_fn: dict = {}          # grad_fn -> [(name, tensor)] for named non-leaf tensors
    leaf_name: dict = {}      # id(leaf tensor) -> name
    storages: dict = {}
    for n, t in names.items():
        if t.grad_fn is not None:
            by_fn.setdefault(t.grad_fn, []).append((n, t))
        elif t.requires_grad:
            leaf_name[id(t)] = n
        key = _storage_key(t)
        if key is not None:
            storages.setdefault(key, []).append((n, _geometry(t)))

    snap = Snapshot(roots=root_names, ops={}, tensors={}, edges=[])
    node_id: dict = {}        # grad_fn -> id; holds refs only during the walk
    leaf_box: dict = {}       # id(leaf tensor) -> id of its box: one box per leaf
    keep = []                 # keeps walked objects alive so identities stay unique
    queue = deque()

    def new_leaf(leaf):
        nid = f"leaf{len(leaf_box) + 1}"
        name = leaf_name.get(id(leaf), f"leaf {len(leaf_box) + 1}")
        snap.tensors[nid] = _tensor_box(nid, name, "leaf", leaf)
        leaf_box[id(leaf)] = nid
        keep.append(leaf)
        return nid

    def visit(fn):
        if fn in node_id:
            return node_id[fn], False
        is_leaf = type(fn).__name__ == "AccumulateGrad"
        if is_leaf:
            leaf = fn.variable
            if id(leaf) in leaf_box:  # drawn already (a leaf passed as a root)
                keep.append(fn)
                node_id[fn] = leaf_box[id(leaf)]
                return node_id[fn], False
        if len(snap.ops) + len(leaf_box) >= max_nodes:
            return None, True
        keep.append(fn)
        if is_leaf:
            nid = new_leaf(leaf)
        else:
            nid = f"op{len(snap.ops) + 1}"
            snap.ops[nid] = Op(id=nid, name=fn.name(),
                               saved=_read_saved(fn, storages))
            queue.append((fn, nid))
        node_id[fn] = nid
        return nid, False

    hidden = []
    hidden_leaves = []        # leaves passed as roots, beyond the cap
    edge_set = set()          # membership for snap.edges (a list, in discovery order)
    cut_set = set()
    for name, t in zip(root_names, roots):
        if t.grad_fn is None:  # a leaf as root: the graph is just the leaf
            if t.requires_grad and id(t) not in leaf_box:
                leaf_name.setdefault(id(t), name)
                if len(snap.ops) + len(leaf_box) >= max_nodes:
                    hidden_leaves.append(t)   # the cap holds for roots too
                else:
                    new_leaf(t)
            continue
        _, over = visit(t.grad_fn)
        if over:  # a root beyond the cap (many roots, small max_nodes): counted, not dropped
            hidden.append(t.grad_fn)
    while queue:
        fn, nid = queue.popleft()
        for nxt, _ in fn.next_functions:
            if nxt is None:
                continue
            src, over = visit(nxt)
            if over:
                hidden.append(nxt)
                if nid not in cut_set:
                    cut_set.add(nid)
                    snap.cut_at.append(nid)
                continue
            if (src, nid) not in edge_set:
                edge_set.add((src, nid))
                snap.edges.append((src, nid))
            snap.ops[nid].inputs.append(src)

    # Named non-leaf tensors (roots, retained intermediates) hang off the op that made them.
    for fn, named in by_fn.items():
        op_id = node_id.get(fn)
        if op_id is None:
            continue
        for n, t in named:
            role = "output" if n in root_names else "intermediate"
            tid = f"t_{op_id}_{len(snap.ops[op_id].produces)}"
            snap.tensors[tid] = _tensor_box(tid, n, role, t, made_by=op_id)
            snap.ops[op_id].produces.append(n)
            snap.edges.append((op_id, tid))

    snap.total_nodes = len(snap.ops) + len(leaf_box)
    if hidden or hidden_leaves:
        snap.truncated = True
        _count_hidden(snap, hidden, set(node_id), set(leaf_box), hidden_leaves)
    return snap, node_id


def _count_hidden(snap, frontier, seen_fns, drawn_leaves=frozenset(), root_leaves=()) -> None:
    """Count (iteratively) the nodes beyond the cap, by type, up to COUNT_LIMIT."""
    seen = set(seen_fns)
    stack = list(frontier)
    keep = []
    leaves = set(drawn_leaves)  # ids of leaf tensors drawn or counted: each counts once
    for t in root_leaves:
        if id(t) not in leaves:
            leaves.add(id(t))
            snap.hidden_by_type["leaf"] += 1
    while stack:
        fn = stack.pop()
        if fn in seen:
            continue
        seen.add(fn)
        keep.append(fn)
        if type(fn).__name__ == "AccumulateGrad":
            if id(fn.variable) in leaves:
                continue  # a leaf passed as a root: drawn or counted already
            leaves.add(id(fn.variable))
            snap.hidden_by_type["leaf"] += 1
        else:
            snap.hidden_by_type[fn.name()] += 1
        if len(seen) >= COUNT_LIMIT:
            snap.count_capped = True
            break
        stack.extend(n for n, _ in fn.next_functions if n is not None)
    snap.total_nodes += sum(snap.hidden_by_type.values())


def _tensor_box(nid, name, role, t, made_by=None) -> TensorBox:
    grad = None
    if t.is_leaf or t.retains_grad:
        g = t.grad  # no warning: leaves and retained tensors may be read
        grad = None if g is None else fmt_values(g)
    return TensorBox(id=nid, name=name, role=role, shape=tuple(t.shape), dtype=_dtype_name(t.dtype),
                     requires_grad=t.requires_grad, retains_grad=bool(t.retains_grad) and not t.is_leaf,
                     grad=grad, made_by=made_by)
