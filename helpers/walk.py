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
from dataclasses import dataclass, field

import torch

# Hard ceiling on how far we walk to count a graph that is over the drawing cap.
COUNT_LIMIT = 200_000


class GraphInputError(ValueError):
    """Raised for input the renderer cannot draw, with a message saying what to do."""


@dataclass(frozen=True)
class Saved:
    """One thing an op node saved for backward."""

    slot: str              # 'self', 'other', 'result', 'saved_tensors[0]', 'exponent', ...
    is_tensor: bool
    state: str             # 'held' or 'freed' for tensors, 'value' for non-tensors
    shape: tuple | None = None
    dtype: str | None = None
    nbytes: int | None = None
    alias: str | None = None   # a named tensor sharing this storage ('a', 'c', ...)
    value: str | None = None   # printed form of a non-tensor value
    modified: str | None = None  # held, but changed in place since saved: "version 1 -> 2"

    def describe(self) -> str:
        if not self.is_tensor:
            return f"{self.slot} = {self.value}"
        stale = f" MODIFIED IN PLACE since saved ({self.modified})" if self.modified else ""
        if self.shape is None:
            return f"{self.slot}: size unknown{stale}"
        alias = f" (= {self.alias})" if self.alias else ""
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
        out = {"held": 0, "freed": 0}
        for _, s in self.saved_tensors():
            out[s.state] += s.nbytes or 0
        return out

    def count_by_state(self) -> dict:
        out = {"held": 0, "freed": 0}
        for _, s in self.saved_tensors():
            out[s.state] += 1
        return out


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
        names = sorted(a for a in dir(fn) if a.startswith("_saved_"))
        if hasattr(fn, "saved_tensors") and not names:  # custom autograd.Function
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


def _tensor_saved(slot, t, storages) -> Saved:
    key = _storage_key(t)
    return Saved(slot=slot, is_tensor=True, state="held", shape=tuple(t.shape),
                 dtype=_dtype_name(t.dtype), nbytes=t.numel() * t.element_size(),
                 alias=storages.get(key))


def _storage_key(t):
    try:
        return t.untyped_storage().data_ptr(), t.untyped_storage().nbytes()
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
        except RuntimeError as err:
            note = _modified_note(err)
            if note is not None:  # still held, but backward through this node would raise
                prev = [s for k, s in known.items() if k == slot or k.startswith(slot + "[")]
                out.extend([Saved(p.slot, True, "held", p.shape, p.dtype, p.nbytes, p.alias, modified=note)
                            for p in prev] or [Saved(slot, True, "held", modified=note)])
                continue
            if not _is_freed_error(err):
                raise
            prev = [s for k, s in known.items() if k == slot or k.startswith(slot + "[")]
            if prev:
                out.extend(Saved(p.slot, True, "freed", p.shape, p.dtype, p.nbytes, p.alias)
                           for p in prev)
            else:
                out.append(Saved(slot, True, "freed"))
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
        elif value is None:
            continue  # optional input that was not needed: nothing saved
        else:
            out.append(Saved(slot=slot, is_tensor=False, state="value", value=_fmt_value(value)))
    return out


def _fmt_value(v) -> str:
    if isinstance(v, float):
        return fmt_number(v)
    if isinstance(v, (tuple, list)):
        return "(" + ", ".join(_fmt_value(x) for x in v) + ("," if len(v) == 1 else "") + ")"
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
        if t.grad_fn is None and not t.requires_grad:
            raise GraphInputError(
                f"argument {i} has no autograd graph: requires_grad=False and no grad_fn. "
                "Autograd only records operations on tensors that require grad. Create the inputs "
                "with requires_grad=True (or call x.requires_grad_()), make sure the computation "
                "is not inside torch.no_grad() or after .detach(), then compute it again.")
    for name, t in (names or {}).items():
        if not isinstance(name, str):
            raise GraphInputError(f"names must map a name (str) to a tensor; got key {name!r}.")
        if not isinstance(t, torch.Tensor):
            raise GraphInputError(_not_a_tensor(f"names[{name!r}]", t))


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
    return f"{where} is {kind}, not a torch.Tensor: {hint}"


def snapshot(*roots, names=None, max_nodes=300) -> Snapshot:
    """Walk the graph behind `roots` (tensors) and record it."""
    check_roots(roots, names)
    names = dict(names or {})

    # Who is who: leaves and named non-leaf tensors, by identity.
    root_names = []
    for i, t in enumerate(roots):
        found = next((n for n, v in names.items() if v is t), None)
        if found is None:
            found = "out" if len(roots) == 1 else f"out{i + 1}"
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
            storages.setdefault(key, n)

    snap = Snapshot(roots=root_names, ops={}, tensors={}, edges=[])
    node_id: dict = {}        # grad_fn (or leaf tensor) -> id; holds refs only during the walk
    keep = []                 # keeps walked objects alive so identities stay unique
    queue = deque()
    leaf_count = 0

    def visit(fn):
        nonlocal leaf_count
        if fn in node_id:
            return node_id[fn], False
        if len(node_id) >= max_nodes:
            return None, True
        keep.append(fn)
        if type(fn).__name__ == "AccumulateGrad":
            leaf = fn.variable
            leaf_count += 1
            nid = f"leaf{leaf_count}"
            name = leaf_name.get(id(leaf), f"leaf {leaf_count}")
            snap.tensors[nid] = _tensor_box(nid, name, "leaf", leaf)
        else:
            nid = f"op{len(snap.ops) + 1}"
            snap.ops[nid] = Op(id=nid, name=fn.name(),
                               saved=_read_saved(fn, storages))
            queue.append((fn, nid))
        node_id[fn] = nid
        return nid, False

    hidden = []
    for name, t in zip(root_names, roots):
        if t.grad_fn is None:  # a leaf as root: the graph is just the leaf
            if t.requires_grad:
                acc_id = next((i for i, b in snap.tensors.items() if b.name == name), None)
                if acc_id is None:
                    leaf_count += 1
                    nid = f"leaf{leaf_count}"
                    snap.tensors[nid] = _tensor_box(nid, name, "leaf", t)
            continue
        visit(t.grad_fn)
    while queue:
        fn, nid = queue.popleft()
        for nxt, _ in fn.next_functions:
            if nxt is None:
                continue
            src, over = visit(nxt)
            if over:
                hidden.append(nxt)
                if nid not in snap.cut_at:
                    snap.cut_at.append(nid)
                continue
            if (src, nid) not in snap.edges:
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

    snap.total_nodes = len(node_id)
    if hidden:
        snap.truncated = True
        _count_hidden(snap, hidden, set(node_id))
    return snap


def _count_hidden(snap, frontier, seen_fns) -> None:
    """Count (iteratively) the nodes beyond the cap, by type, up to COUNT_LIMIT."""
    seen = set(seen_fns)
    stack = list(frontier)
    keep = []
    while stack:
        fn = stack.pop()
        if fn in seen:
            continue
        seen.add(fn)
        keep.append(fn)
        snap.hidden_by_type[fn.name() if type(fn).__name__ != "AccumulateGrad" else "leaf"] += 1
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
