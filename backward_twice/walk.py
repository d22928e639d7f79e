"""Walk an autograd graph and record what it holds, as plain data.

The walk is iterative (a 5,000-layer chain is fine), visits nodes in a
deterministic order (breadth-first from the roots, in the order given), and
never keeps the graph alive: a `Snapshot` holds names, shapes and states only.

A saved tensor is reported "freed" only when reading it really raises, which is
what `backward()` without `retain_graph=True` does to every tensor it saved.
"""
from __future__ import annotations

import dataclasses
import re
import weakref
from collections import Counter, deque
from collections.abc import Mapping

import torch
from torch.autograd.graph import Node

# The data model and the formatters live in backward_twice.snapshot (notebooks import them from there).
from .snapshot import (
    AboveFocus,
    DrawOptions,
    GraphInputError,
    Op,
    OutsideScope,
    Role,
    Saved,
    SavedKind,
    SavedState,
    Snapshot,
    TensorBox,
    dtype_name,
    fmt_number,
    fmt_shape,
    fmt_values,
    gc_paused,
)

# Hard ceiling on how many nodes one walk touches (drawn + counted beyond the cap).
# Not only a time limit: in torch 2.13, once Python has touched the nodes of a chain
# deeper than ~45,000 (8 MB C stack), freeing that graph later overflows the C stack
# and kills the process (segfault). 20,000 stays well clear of that.
COUNT_LIMIT = 20_000


class SavedTensorModified(RuntimeError):
    """Raised by a saved-tensor hook (backward_twice.memory) when a saved tensor was changed in place
    since it was saved: what autograd itself raises then, with the two versions as data, so
    the walk reads them instead of parsing a message."""

    def __init__(self, message: str, saved_version: int, now_version: int):
        super().__init__(message)
        self.saved_version, self.now_version = saved_version, now_version


# --------------------------------------------------------------------------------
_SAVED_ATTRS: dict[type, list[str]] = {}
_SLOTS: dict[type, tuple[tuple[str, str, str | None], ...]] = {}


def _saved_attr_names(fn) -> list[str]:
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
        # (attribute, slot, its raw SavedTensor attribute or None when the class has none: a
        # saved size or flag), so a node's slots are read without asking for absent attributes
        _SLOTS[cls] = tuple((a, a[len("_saved_"):] if a.startswith("_saved_") else a,
                             raw if (raw := "_raw_" + a.lstrip("_")) in attrs else None) for a in names)
    return names


def _slots_of(fn) -> tuple[tuple[str, str, str | None], ...]:
    """(attribute, slot, raw attribute or None) for each thing a node's class saves (cached)."""
    slots = _SLOTS.get(type(fn))
    if slots is None:
        _saved_attr_names(fn)
        slots = _SLOTS[type(fn)]
    return slots


def _is_freed_error(err: RuntimeError) -> bool:
    text = str(err)
    return "freed" in text or "backward through the graph a second time" in text


# torch's own message when a saved tensor was changed in place (no saved-tensor hooks)
_TORCH_VERSIONS = re.compile(r"modified by an inplace operation.*is at version (\d+); expected version (\d+)", re.S)


def _modified_note(err: RuntimeError) -> str | None:
    """'version 1 -> 2' when reading a saved tensor failed because it was changed in place."""
    if isinstance(err, SavedTensorModified):
        return f"version {err.saved_version} -> {err.now_version}"
    m = _TORCH_VERSIONS.search(str(err))
    return None if m is None else f"version {m.group(2)} -> {m.group(1)}"


def _unreadable_state(err: Exception) -> tuple[SavedState, str | None]:
    """(state, note) for a saved tensor whose reading raised `err`: (HELD, 'version 0 -> 1')
    when it was changed in place since saved (still in memory; backward would raise),
    (FREED, None), or (UNREADABLE, what was raised)."""
    if isinstance(err, RuntimeError):
        if _is_freed_error(err):
            return SavedState.FREED, None
        note = _modified_note(err)
        if note is not None:
            return SavedState.HELD, note
    first = str(err).strip().splitlines()[0] if str(err).strip() else ""
    note = type(err).__name__ + (": " + first[:60] + ("..." if len(first) > 60 else "") if first else "")
    return SavedState.UNREADABLE, note


def _geometry(t):
    """How a tensor reads its memory: two tensors with the same storage and geometry are the
    same; None when it has no strides (sparse, ...) and only its storage is known."""
    try:
        return tuple(t.shape), t.stride(), t.storage_offset(), t.dtype
    except Exception:
        return None


def _is_transpose(g, h) -> bool:
    """Geometries g and h: the same 2-D memory, one read as the other's transpose."""
    return (g is not None and h is not None and len(g[0]) == 2 and g[0][::-1] == h[0]
            and g[1][::-1] == h[1] and g[2:] == h[2:])


def _tensor_saved(slot, t, storages, node="") -> Saved:
    """A held saved tensor; named after a tensor the caller named if they share memory: '= a'
    when it is `a` seen the same way (shape, strides, offset, dtype), '= a.T' when it is a 2-D `a`
    transposed, else 'shares memory with a'. node: the node's name, or the node (named only in
    an error message)."""
    if t.is_nested:
        refuse_nested(t, f"the tensor {node if isinstance(node, str) else node.name() + ' '}saved as {slot!r}")
    storage = _storage_key(t)
    named = storages.get(storage, ()) if storages else ()
    alias, view = None, False
    if named:
        geometry = _geometry(t)
        same = [n for n, g in named if geometry is not None and g == geometry]
        same += [f"{n}.T" for n, g in named if _is_transpose(g, geometry)]   # Linear saves weight.T
        alias, view = (same[0], False) if same else (named[0][0], True)
    # its bytes: what its view reads, but never more than the buffer behind it (an expanded, stride-0
    # mask reads 4 KiB of a 256 B buffer and holds 256 B). On device 'meta' the buffer has a size and
    # no data: the size is what it would take.
    nbytes, view_nbytes = _saved_bytes(t, storage)
    kind = _saved_kind(slot, t, named=bool(named))
    return Saved.made(slot=slot, is_tensor=True, state=SavedState.HELD, shape=tuple(t.shape),
                      dtype=dtype_name(t.dtype), nbytes=nbytes, view_nbytes=view_nbytes,
                      alias=alias, alias_view=view, storage=storage, kind=kind)


def _saved_bytes(t, storage=False) -> tuple[int, int | None]:
    """(bytes of `t`: its view's, at most its storage's; the view's bytes when they are more than its
    storage's (an expanded view), else None). A slice of a bigger buffer counts its own bytes here;
    the buffer it keeps alive is counted by storage in Snapshot.memory(). storage: its _storage_key
    when already read (its last item is the storage's bytes; None: no storage)."""
    view = t.numel() * t.element_size()
    if storage:
        buffer = storage[2]
    else:
        try:
            buffer = t.untyped_storage().nbytes()
        except Exception:        # no storage to ask (a wrapper subclass): the view's own size
            return view, None
    return (buffer, view) if view > buffer else (view, None)


def _saved_kind(slot: str, t: torch.Tensor, named: bool = False) -> SavedKind:
    """Whose memory a saved tensor is: a leaf that requires grad (a parameter) or a view of one;
    made by the graph (it has a grad_fn, or it is an op's own output: 'result', 'result1', ...,
    such as max_pool's indices); else an input made outside the graph (data, a constant). An
    autograd.Function's ctx.saved_tensors (`saved_tensors[i]`) is the exception: its forward runs
    without grad, so what it made (a compiled graph's Tanh output) has no grad_fn either, like data
    given to it. Such a tensor is an input only when a name holds its memory (`named`); else it is
    SavedKind.FUNCTION: either, not told apart."""
    base = t._base
    if base is None:
        base = t
    if base.requires_grad and base.is_leaf:
        return SavedKind.LEAF
    if slot.startswith("result") or t.grad_fn is not None or base.grad_fn is not None:
        return SavedKind.ACTIVATION
    if slot.startswith("saved_tensors") and not named:
        return SavedKind.FUNCTION
    return SavedKind.INPUT


def _storage_key(t):
    """Which buffer `t` reads: the storage itself (its C++ object), never its address alone. Every
    tensor on the meta device has address 0, and two unrelated tensors of one size would look like
    one buffer by address; views of one storage share its object."""
    try:
        st = t.untyped_storage()
        return st._cdata, st.data_ptr(), st.nbytes()
    except Exception:  # sparse or otherwise storage-less tensors
        return None


# ---- the one place that reads autograd's raw saved variables (torch internals) ----------
# A node's `_saved_<slot>` unpacks what it saved: with saved-tensor hooks that runs the hook,
# and a non-reentrant torch.utils.checkpoint's unpack hook re-runs the user's forward (once per
# read), and may only run once per backward. `_raw_saved_<slot>` (`_raw_saved_tensors` for a
# custom Function) gives torch._C._autograd.SavedTensor objects instead, whose `unpack_hook`
# (None when no hook was installed, or once backward freed it) and `data` (what the pack hook
# returned, None once freed) are read without unpacking. Guarded by tests/test_internals.py.

NOT_UNPACKED = "not unpacked"   # Saved.value of a slot a hook packed into something not a tensor
SAFE_UNPACK_HOOKS: set = set()   # unpack hooks that run no user code (backward_twice.memory registers its own)


def _raw_saved(fn, attr, raw_attr: str | None = ""):
    """The SavedTensor object(s) behind `fn.<attr>` (one, or a tuple), or None when torch has none
    (a custom Function's `_raw_saved_tensors` raises once backward freed them: None too).
    raw_attr: its name when known (None: the class has none), else worked out from `attr`."""
    if raw_attr is None:
        return None
    try:
        return getattr(fn, raw_attr or "_raw_" + attr.lstrip("_"), None)
    except RuntimeError:
        return None


def _checkpoint_holder_type():
    from torch.utils import checkpoint

    return getattr(checkpoint, "_Holder", None)


def _hooked_saved(fn, attr, raw_attr: str | None = "") -> list | None:
    """[(slot suffix, packed object or None when freed)] when `fn.<attr>` was packed by a
    saved-tensor hook that may run user code (then it is never unpacked), else None: read it
    the ordinary way (no hook, or a hook in SAFE_UNPACK_HOOKS)."""
    raw = _raw_saved(fn, attr, raw_attr)
    if raw is None:
        return None
    many = isinstance(raw, (tuple, list))
    if not many:                # the common case: one tensor, no hook
        hook = getattr(raw, "unpack_hook", None)
        if hook is None or hook in SAFE_UNPACK_HOOKS:
            return None
    items = list(raw) if many else [raw]
    hooks = [getattr(r, "unpack_hook", None) for r in items]
    if all(h is None or h in SAFE_UNPACK_HOOKS for h in hooks):
        return None
    return [(f"[{i}]" if many else "", r.data) for i, r in enumerate(items)]


def _packed_saved(slot, packed, storages, node) -> Saved:
    """What a saved-tensor hook left in the graph, read without unpacking it: nothing (FREED),
    a checkpoint's placeholder (RECOMPUTED: backward re-runs the forward to make it, so no
    memory is held for it), or a tensor the hook keeps (save_on_cpu: the CPU copy, HELD)."""
    if packed is None:
        return Saved(slot, True, SavedState.FREED)
    holder = _checkpoint_holder_type()
    if holder is not None and isinstance(packed, holder):
        return Saved(slot, True, SavedState.RECOMPUTED, value="recomputed in backward (checkpoint)")
    kept = packed if isinstance(packed, torch.Tensor) else next(
        (v for v in packed if isinstance(v, torch.Tensor)), None) if isinstance(packed, (tuple, list)) else None
    if kept is not None:
        return _tensor_saved(slot, kept, storages, node)
    return Saved(slot, True, SavedState.UNREADABLE,
                 value=f"{NOT_UNPACKED}: a saved-tensor hook keeps it as a {type(packed).__name__}")


# an Enum member looked up costs 60 ns: these are read once
HELD_STATE, FREED_STATE, RECOMPUTED_STATE = SavedState.HELD, SavedState.FREED, SavedState.RECOMPUTED
_META_KEY = "backward_twice.saved"
_HOLDERS_KEY = "backward_twice.holders"


def _still_holding(record, held_now: set, alive_cache: dict) -> tuple[str, ...]:
    """Saved.held_by from a record of _Walk.record_holders: () when the buffer is gone.
    record: (weak reference to the storage, the storage's holders, the node_key of the slot's own
    node); held_now: {(node_key, slot)} of the slots this walk read held. The holders of one
    storage are one list shared by all its slots, so whether each is alive is worked out once per
    storage (alive_cache), not once per slot: linear in the slots, however many share a buffer."""
    storage_ref, holders, own = record
    if storage_ref() is None:
        return ()
    alive = alive_cache.get(id(holders))
    if alive is None:
        # word -> up to two (position, node key) entries with different keys (None: a leaf or a
        # variable): enough to say where the word comes first for any slot's own node
        alive = {}
        for pos, (word, ref, node_slot) in enumerate(holders):
            live = ref() is not None if ref is not None else node_slot in held_now
            if not live:
                continue
            key = None if ref is not None else node_slot[0]
            seen = alive.setdefault(word, [])
            if not seen or (len(seen) == 1 and seen[0][1] != key):
                seen.append((pos, key))
        alive_cache[id(holders)] = alive
    first = []
    for word, seen in alive.items():
        pos = next((p for p, key in seen if key is None or key != own), None)
        if pos is not None:
            first.append((pos, word))
    return tuple(w for _, w in sorted(first)) or ("something not drawn here",)


# What reading a slot raises once backward freed it, given without reading it (saved_slots' `held`)
_FREED = RuntimeError("the saved tensor was freed by backward (its SavedTensor holds no data)")


def saved_slots(fn, functions: bool = True, held=()):
    """What node `fn` saved, slot by slot, read without running a saved-tensor hook that may run
    user code: the one reader of a live node's saved tensors (backward_twice.walk draws from it,
    backward_twice.diagnose diagnoses from it). Yields (slot, how, what):
    - ("packed", the object such a hook packed, never unpacked: a checkpoint's placeholder, a
      tensor the hook keeps, or None once backward freed it), the slot suffixed "[i]" when it is
      one of several;
    - ("value", what reading it the ordinary way gave: no hook, or one in SAFE_UNPACK_HOOKS);
    - ("error", the exception that reading raised: freed by backward, changed in place, ...).
    functions=False leaves out a custom autograd.Function's `saved_tensors`.
    held: slots an earlier walk read as tensors. Such a slot whose SavedTensor now holds no data
    was freed (a tensor, once saved, is never undefined): ("error", a freed error) without
    reading it, as reading it would raise exactly that, at the cost of a C++ exception a slot."""
    for attr, slot, raw_attr in _slots_of(fn):
        if not functions and attr == slot:     # a custom Function's saved_tensors
            continue
        raw = _raw_saved(fn, attr, raw_attr)   # read once here: this runs for every slot of every node
        if raw is not None:
            many = isinstance(raw, (tuple, list))
            hook = None if many else getattr(raw, "unpack_hook", None)
            if many or (hook is not None and hook not in SAFE_UNPACK_HOOKS):
                hooked = _hooked_saved(fn, attr, raw_attr)
                if hooked is not None:   # packed by a hook that may run user code: never unpacked
                    for suffix, packed in hooked:
                        yield slot + suffix, "packed", packed
                    continue
            if not many and slot in held and attr != slot and raw.data is None:
                yield slot, "error", _FREED
                continue
        try:
            value = getattr(fn, attr)
        except Exception as err:  # freed by backward, changed in place, or a saved-tensor hook failed
            yield slot, "error", err
            continue
        yield slot, "value", value


def raw_saved_tensor(fn, slot: str) -> torch.Tensor | None:
    """The tensor node `fn` saved in `slot`, as it was saved: not unpacked (no hook runs) and
    without autograd's version check (a tensor changed in place since is given too); None when
    backward freed it, a hook packed it as something else, or torch has no raw variable for it."""
    raw = _raw_saved(fn, "_saved_" + slot)
    try:
        data = raw.data
    except Exception:
        return None
    return data if isinstance(data, torch.Tensor) else None


def _read_saved(fn, storages, seen: dict | None = None) -> list[Saved]:
    """Everything `fn` saved, each marked held or freed.

    Sizes of a tensor seen held in an earlier walk are kept in the node's own
    `metadata` dict, so a picture drawn after backward still says how big the
    freed buffer was (and the record dies with the node).
    seen: a dict to fill with {(fn, slot): (tensor, its _storage_key)} for the tensors read held
    (_Walk.record_holders).
    """
    try:
        known = fn.metadata.setdefault(_META_KEY, {})
    except (AttributeError, RuntimeError):
        known = {}
    out = []
    for slot, how, value in saved_slots(fn, held=known):
        if how == "packed":   # by a hook that may run user code: never unpacked
            saved = _packed_saved(slot, value, storages, f"{fn.name()} ")
            prev = known.get(saved.slot)
            if saved.state is SavedState.FREED and prev is not None:
                saved = dataclasses.replace(prev, state=SavedState.FREED, value=None, modified=None)
            elif saved.state is not SavedState.FREED:
                known[saved.slot] = saved
            out.append(saved)
            continue
        if how == "error":  # freed by backward, changed in place, or a saved-tensor hook failed
            state, note = _unreadable_state(value)
            prev = [s for k, s in known.items() if k == slot or k.startswith(slot + "[")]
            modified = note if state is SavedState.HELD else None
            value = note if state is SavedState.UNREADABLE else None
            if prev:   # what an earlier walk saw held: its size, its name
                out.extend(dataclasses.replace(p, state=state, value=value, modified=modified) for p in prev)
            else:
                out.append(Saved(slot, True, state, value=value, modified=modified))
            continue
        if isinstance(value, torch.Tensor):
            out.append(_tensor_saved(slot, value, storages, fn))
            known[slot] = out[-1]
            if seen is not None:
                seen[(fn, slot)] = (value, out[-1].storage)
        elif isinstance(value, (tuple, list)) and value and not isinstance(value[0], (int, float)) and all(
                isinstance(v, torch.Tensor) or v is None for v in value):     # (sizes and strides: ints, not this)
            for i, v in enumerate(value):
                if v is not None:
                    out.append(_tensor_saved(f"{slot}[{i}]", v, storages, fn))
                    known[out[-1].slot] = out[-1]
                    if seen is not None:
                        seen[(fn, out[-1].slot)] = (v, out[-1].storage)
        elif value is None or (slot == "saved_tensors" and not value):
            continue  # optional input that was not needed, or a Function that saved nothing
        else:
            out.append(_value_saved(slot, _fmt_value(value)))
    return out


_INT_TUPLES: dict[tuple, str] = {}
_VALUES: dict[tuple[str, str], Saved] = {}


def _value_saved(slot: str, text: str) -> Saved:
    """A saved setting or size (`exponent = 2`, `self_sym_sizes = (4, 8)`): one frozen Saved per
    slot and value, shared (they repeat op after op; a bounded cache)."""
    saved = _VALUES.get((slot, text))
    if saved is None:
        saved = Saved(slot=slot, is_tensor=False, state=SavedState.VALUE, value=text)
        if len(_VALUES) < 4096:
            _VALUES[(slot, text)] = saved
    return saved


def _fmt_value(v) -> str:
    if type(v) is int:  # the common case (sizes, strides, dims): skip the checks below
        # torch hands a negative int64 (dim=-1, padding_idx=-1) over as its unsigned bits
        return str(v - (1 << 64) if v >= 1 << 63 else v)
    if isinstance(v, float):
        return fmt_number(v)
    if isinstance(v, (tuple, list)):
        if all(type(x) is int for x in v):
            key = tuple(v)      # sizes and strides repeat: each formatted once (a bounded cache)
            done = _INT_TUPLES.get(key)
            if done is None:
                done = "(" + ", ".join(map(_fmt_value, v)) + ("," if len(v) == 1 else "") + ")"
                if len(_INT_TUPLES) < 4096:
                    _INT_TUPLES[key] = done
            return done
        return "(" + ", ".join(_fmt_value(x) for x in v) + ("," if len(v) == 1 else "") + ")"
    text = str(v)
    return text if len(text) <= 40 else text[:37] + "..."


# --------------------------------------------------------------------------------
NESTED_REFUSED = ("is a nested tensor ({layout}): its parts have different shapes, so it has no one "
                  "shape or size, and these pictures draw only ordinary tensors. Draw a graph of "
                  "ordinary tensors: start from a padded copy, "
                  "torch.nested.to_padded_tensor(nt.detach(), 0.0).requires_grad_(), or from each "
                  "part of nt.unbind() on its own.")


def refuse_nested(t: torch.Tensor, where: str) -> None:
    """A GraphInputError for a nested tensor met at `where` (torch raises an internal
    RuntimeError on its .shape, or an AttributeError for the jagged layout)."""
    if t.is_nested:
        layout = "jagged" if t.layout is torch.jagged else "strided"
        raise GraphInputError(f"{where} " + NESTED_REFUSED.format(layout=layout))


def check_roots(roots, names) -> None:
    if not roots:
        raise GraphInputError(
            "draw() needs at least one tensor: call draw(loss), or draw(d, e, names={'d': d, 'e': e}).")
    for i, t in enumerate(roots, 1):
        if not isinstance(t, torch.Tensor):
            raise GraphInputError(not_a_tensor(f"argument {i}", t))
        refuse_nested(t, f"argument {i}")
        if _grad_fn(t, f"argument {i}") is None and not t.requires_grad:
            raise GraphInputError(
                f"argument {i} has no autograd graph: requires_grad=False and no grad_fn. "
                "Autograd only records operations on tensors that require grad. Create the inputs "
                "with requires_grad=True (or call x.requires_grad_()), make sure the computation "
                "is not inside torch.no_grad() or after .detach(), then compute it again.")
    if names is not None:
        check_names(names)
    for name, t in (names or {}).items():
        refuse_nested(t, f"names[{name!r}]")
        _grad_fn(t, f"names[{name!r}]")


def check_names(names, what: str = "names", like: str = "names={'a': a, 'loss': loss}") -> None:
    """A dict {name (str): tensor}, or a GraphInputError that says what is wrong (draw, at_a_glance)."""
    if not isinstance(names, Mapping):
        raise GraphInputError(f"{what} must be a dict {{name: tensor}}, like {like}; got a {type(names).__name__}.")
    for name, t in names.items():
        if not isinstance(name, str):
            raise GraphInputError(f"{what} must map a name (str) to a tensor; got key {name!r}.")
        if not isinstance(t, torch.Tensor):
            raise GraphInputError(not_a_tensor(f"{what}[{name!r}]", t))


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


def not_a_tensor(where, obj) -> str:
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


def snapshot(*roots, names=None, max_nodes=300, focus=None, hide_params=False,
             options: DrawOptions | None = None) -> Snapshot:
    """Walk the graph behind `roots` (tensors) and record it.

    focus: a tensor the roots were computed from, a grad_fn node, or a list of them: only
    the part of the graph under the focus (what feeds it) is recorded, and what lies between
    the roots and the focus is counted in `Snapshot.above`.
    hide_params: leaves are not recorded, only named in `Snapshot.params_hidden`.
    options: a DrawOptions, instead of max_nodes, focus and hide_params.

    Example (run by tests/test_docstrings.py):

        >>> import torch, backward_twice as bt
        >>> a = torch.tensor([1.0, 2.0], requires_grad=True)
        >>> loss = (a * a).sum()
        >>> snap = bt.take_snapshot(loss, names={'a': a})
        >>> bt.saved_states(snap)
        {'MulBackward0.other': 'held', 'MulBackward0.self': 'held'}
    """
    return snapshot_with_ids(*roots, names=names, max_nodes=max_nodes, focus=focus, hide_params=hide_params,
                             options=options)[0]


def snapshot_with_ids(*roots, names=None, max_nodes=300, focus=None, hide_params=False,
                      options: DrawOptions | None = None, earlier: Snapshot | None = None
                      ) -> tuple[Snapshot, dict[Node, str]]:
    """`snapshot(...)`, and {grad_fn: its id in the snapshot ('op3', 'leaf1')} for the nodes
    drawn: what the stepper needs to name live nodes. The dict holds references to the nodes,
    so keep it no longer than the graph itself. earlier: a snapshot of the same roots with the
    same options (watch()'s before): when it drew the same nodes, its count of the nodes beyond
    the cap is taken, not counted again (a graph's shape never changes; 20k nodes walked once)."""
    if options is None:
        options = DrawOptions(max_nodes=max_nodes, focus=focus, hide_params=hide_params)
    check_roots(roots, names)
    check_max_nodes(options.max_nodes)
    items = None if options.focus is None else check_focus(options.focus)
    with gc_paused():
        return _walk(roots, names, options, items, earlier)


def _walk(roots, names, options: DrawOptions, items, earlier=None) -> tuple[Snapshot, dict[Node, str]]:
    """The phases of one walk, in order (snapshot_with_ids, inputs checked)."""
    names, root_names = _name_roots(roots, names)
    focus_names = None if items is None else _name_focus(items, names)
    walk = _Walk(names, root_names, options)
    if items is None:
        walk.add_roots(roots)
    else:
        walk.add_focus(roots, items, focus_names)
    walk.breadth_first()
    walk.attach_named_tensors()
    walk.record_holders()
    walk.count_hidden(earlier)
    walk.summarise_above()
    walk.summarise_outside()
    walk.snap.on_meta = any(getattr(t, "is_meta", False) for t in roots)
    walk.snap.options = options
    return walk.snap, walk.node_id


def nodes_under(starts, limit: int = COUNT_LIMIT, parents: dict | None = None) -> tuple[list[Node], bool]:
    """(every node reachable from the nodes `starts` through next_functions, breadth-first,
    starts included; True when there were more than `limit` and the walk stopped there).
    parents: a dict to fill with {node: the node it was first reached from} (None for a start),
    so following it from a node gives a shortest path up to a start.
    Iterative: a 5,000-deep chain is fine."""
    seen: set[Node] = set()
    order: list[Node] = []
    queue = deque((s, None) for s in starts if s is not None)
    while queue:
        fn, parent = queue.popleft()
        if fn in seen:
            continue
        if len(order) >= limit:
            return order, True
        seen.add(fn)
        order.append(fn)
        if parents is not None:
            parents[fn] = parent
        queue.extend((n, fn) for n, _ in fn.next_functions if n is not None)
    return order, False


def is_leaf_node(fn) -> bool:
    """Whether a live autograd node is a leaf tensor's AccumulateGrad: the one test for "is this a
    leaf" (backward_twice.modules, backward_twice.diagnose and backward_twice.diagnosis_picture use it too)."""
    return type(fn).__name__ == "AccumulateGrad"


def node_key(fn: Node) -> tuple:
    """What identifies a live node across walks: an op by its name and creation number
    (`_sequence_nr`, unique per thread), a leaf's AccumulateGrad (whose number is always the
    same) by its tensor's identity. Snapshot.node_keys holds it per drawn id."""
    if is_leaf_node(fn):
        return ("leaf", id(fn.variable))
    return (fn.name(), fn._sequence_nr())


def check_focus(focus) -> list:
    """The focus as a list of tensors and grad_fn nodes, or a GraphInputError saying what to pass."""
    many = isinstance(focus, (list, tuple))
    items = list(focus) if many else [focus]
    if not items:
        raise GraphInputError("focus= needs at least one tensor: draw(loss, focus=h), or focus=[h, c].")
    how = "focus= takes a tensor the roots were computed from (or a list of them), like draw(loss, focus=h)"
    for i, f in enumerate(items):
        where = f"focus[{i}]" if many else "focus"
        if isinstance(f, Node):
            continue
        if not isinstance(f, torch.Tensor):
            kind = "None" if f is None else f"a {type(f).__name__}"
            hint = " (a Python number has no graph: did you call .item()?)" if isinstance(f, (int, float)) else ""
            hint = " (pass the tensor a layer returned, not the layer)" if isinstance(f, torch.nn.Module) else hint
            raise GraphInputError(f"{where} is {kind}, not a torch.Tensor{hint}: {how}.")
        if _grad_fn(f, where) is None and not f.requires_grad:
            raise GraphInputError(
                f"{where} has no autograd graph (requires_grad=False and no grad_fn), so it is not part "
                "of the graph behind the roots. Pass a tensor the roots were computed from, not a "
                ".detach()ed copy or one made under torch.no_grad().")
    return items


def _name_focus(items, names: dict) -> list[str]:
    """The name of each focus item: the name given in `names`, else 'focus' ('focus1', ... for
    several; added to `names`, so its box is drawn), or a node's own name."""
    return [f.name() if isinstance(f, Node) else
            _name_in(names, f, "focus" if len(items) == 1 else f"focus{i + 1}") for i, f in enumerate(items)]


def _name_roots(roots, names) -> tuple[dict[str, torch.Tensor], list[str]]:
    """(every name -> tensor, the roots' names): a root the caller did not name is 'out'
    (or 'out1', 'out2', ... for several), never taking a name given to another tensor."""
    names = dict(names or {})
    root_names = [_name_in(names, t, "out" if len(roots) == 1 else f"out{i + 1}") for i, t in enumerate(roots)]
    return names, root_names


def _name_in(names: dict, t, default: str) -> str:
    """The name `names` gives tensor `t`; else `default` (primed while taken), added to `names`."""
    found = next((n for n, v in names.items() if v is t), None)
    if found is None:
        found = default
        while found in names:
            found += "'"
        names[found] = t
    return found


class _Walk:
    """One walk of a graph, in phases (the methods, called in order by snapshot_with_ids).

    Node ids are made here and only here: 'op<n>' for an op, 'leaf<n>' for a leaf's box,
    't_<op id>_<k>' for the k-th named tensor an op made. Everywhere else an id is opaque
    and `Snapshot.role(id)` says what it is.
    """

    def __init__(self, names: dict[str, torch.Tensor], root_names: list[str], options: DrawOptions):
        self.root_names, self.options, self.max_nodes = root_names, options, options.max_nodes
        # Who is who: named non-leaf tensors by their grad_fn, leaves by identity, storages.
        self.by_fn: dict[Node, list[tuple[str, torch.Tensor]]] = {}   # grad_fn -> [(name, tensor)] for named non-leaf tensors
        self.leaf_name: dict[int, str] = {}      # id(leaf tensor) -> name
        self.storages: dict[tuple[int, int], list[tuple[str, tuple | None]]] = {}   # storage key -> [(name, geometry)]
        for n, t in names.items():
            if t.grad_fn is not None:
                self.by_fn.setdefault(t.grad_fn, []).append((n, t))
            elif t.requires_grad:
                self.leaf_name[id(t)] = n
            key = _storage_key(t)
            if key is not None:
                self.storages.setdefault(key, []).append((n, _geometry(t)))
        self.snap = Snapshot(roots=root_names, ops={}, tensors={}, edges=[])
        self.node_id: dict[Node, str] = {}   # grad_fn -> id; holds refs only during the walk
        self.leaf_box: dict[int, str] = {}       # id(leaf tensor) -> id of its box: one box per leaf
        self.keep: list[object] = []   # keeps walked objects alive so identities stay unique
        self.names = names
        self.any_freed = False     # a slot read FREED (record_holders then says who still holds it)
        self.held_now: dict[tuple[Node, str], tuple] = {}   # (node, slot) -> (saved tensor read held, its storage key)
        self.leaf_tensor: dict[str, torch.Tensor] = {}   # leaf box id -> its tensor
        self.queue: deque[tuple[Node, str]] = deque()   # (grad_fn, id) of ops whose inputs are not walked yet
        self.hidden: list[Node] = []   # nodes met beyond the cap
        self.hidden_leaves: list[torch.Tensor] = []   # leaves passed as roots, beyond the cap
        self.not_shown: set[Node] = set()   # nodes an option hides (DrawOptions.shows): no box, no cap
        self.edge_set: set[tuple[str, str]] = set()   # membership for snap.edges (a list, in discovery order)
        self.cut_set: set[str] = set()
        self.focus: list | None = None     # with focus=: [(tensor or node, its node, its name)]
        self.above = None                  # with focus=: (rest, above, extra_leaves, capped), live nodes;
                                           # counted into snap.above (an AboveFocus), then dropped

    def _full(self) -> bool:
        return len(self.snap.ops) + len(self.leaf_box) >= self.max_nodes

    def _new_leaf(self, leaf) -> str:
        nid = f"leaf{len(self.leaf_box) + 1}"
        name = self.leaf_name.get(id(leaf), f"leaf {len(self.leaf_box) + 1}")
        self.snap.tensors[nid] = _tensor_box(nid, name, Role.LEAF, leaf)
        self.leaf_box[id(leaf)] = nid
        self.leaf_tensor[nid] = leaf
        self.keep.append(leaf)
        return nid

    def _visit(self, fn, given: bool = False) -> tuple[str | None, bool]:
        """(id of fn, False) once fn is drawn (an op is queued for its inputs); (None, True)
        when the cap is reached; (None, False) when an option hides it (DrawOptions.shows: it
        takes no room under the cap). given: fn is a focus the caller passed."""
        if fn in self.node_id:
            return self.node_id[fn], False
        if fn in self.not_shown:
            return None, False
        is_leaf = is_leaf_node(fn)
        if is_leaf:
            leaf = fn.variable
            if id(leaf) in self.leaf_box:  # drawn already (a leaf passed as a root)
                self.keep.append(fn)
                self.node_id[fn] = self.leaf_box[id(leaf)]
                self.snap.node_keys[self.node_id[fn]] = node_key(fn)
                return self.node_id[fn], False
        if not self.options.shows(is_leaf, given):     # the one visibility rule, before the cap
            self.not_shown.add(fn)
            self.keep.append(fn)
            self.snap.params_hidden.append(self.leaf_name.get(id(fn.variable), f"leaf {fmt_shape(fn.variable.shape)}"))
            return None, False
        if self._full():
            return None, True
        self.keep.append(fn)
        if is_leaf:
            nid = self._new_leaf(leaf)
        else:
            nid = f"op{len(self.snap.ops) + 1}"
            saved = _read_saved(fn, self.storages, self.held_now)
            self.snap.ops[nid] = Op(id=nid, name=fn.name(), saved=saved)
            if saved:
                states = {s.state for s in saved}
                if RECOMPUTED_STATE in states:
                    self.snap.recomputed_in_backward.append(nid)
                self.any_freed = self.any_freed or FREED_STATE in states
            self.queue.append((fn, nid))
        self.node_id[fn] = nid
        self.snap.node_keys[nid] = node_key(fn)
        return nid, False

    def add_roots(self, roots) -> None:
        """Phase 1: the roots' nodes, in the order given (a leaf as root is its own box)."""
        for name, t in zip(self.root_names, roots):
            if t.grad_fn is None:  # a leaf as root: the graph is just the leaf
                if t.requires_grad and id(t) not in self.leaf_box:
                    self.leaf_name.setdefault(id(t), name)
                    if self._full():
                        self.hidden_leaves.append(t)   # the cap holds for roots too
                    else:
                        self._new_leaf(t)
                continue
            _, over = self._visit(t.grad_fn)
            if over:  # a root beyond the cap (many roots, small max_nodes): counted, not dropped
                self.hidden.append(t.grad_fn)

    def add_focus(self, roots, items, focus_names) -> None:
        """Phase 1 with focus=: the focus nodes, in the order given; every node of the roots'
        graph that is not under the focus is counted (summarise_above), not drawn."""
        root_names = ", ".join(self.root_names)
        full, capped = nodes_under([t.grad_fn for t in roots])
        in_full = set(full)
        leaf_roots = [t for t in roots if t.grad_fn is None]
        accumulators = {id(fn.variable): fn for fn in full if is_leaf_node(fn)}
        resolved = []
        for i, (f, name) in enumerate(zip(items, focus_names)):
            where = f"focus[{i}]" if len(items) > 1 else "focus"
            if isinstance(f, Node):
                fn, found = f, f in in_full
            elif f.grad_fn is not None:
                fn, found = f.grad_fn, f.grad_fn in in_full
            else:   # a leaf: its AccumulateGrad node, or a root itself
                fn = accumulators.get(id(f))
                found = fn is not None or any(f is t for t in leaf_roots)
            if not found:
                what = "node" if isinstance(f, Node) else "tensor"
                shown = "" if name.rstrip("'") in ("focus", f"focus{i + 1}") else f" ({name})"
                if capped:
                    raise GraphInputError(
                        f"{where}{shown} was not found in the first {COUNT_LIMIT:,} nodes of the graph "
                        f"behind {root_names}: that graph is too large to search. Draw a smaller part: "
                        f"pass as the root a tensor computed closer to {name}.")
                raise GraphInputError(
                    f"{where}{shown} is not in the graph behind {root_names}: {root_names} was not "
                    f"computed from this {what}. Was it computed again after {root_names} (a new "
                    "tensor with a graph of its own), or in another step? Pass a tensor "
                    f"{root_names} was computed from.")
            resolved.append((f, fn, name))
        self.focus = resolved
        under, _ = nodes_under([fn for _, fn, _ in resolved])
        under_set = set(under)
        # nodes above the focus: those from which a focus node is reached (users, walked back)
        users: dict[Node, list[Node]] = {}
        for fn in full:
            for n, _ in fn.next_functions:
                if n is not None:
                    users.setdefault(n, []).append(fn)
        above, stack = set(), [fn for _, fn, _ in resolved if fn is not None]
        while stack:
            for u in users.get(stack.pop(), ()):
                if u not in above and u not in under_set:
                    above.add(u)
                    stack.append(u)
        rest = [fn for fn in full if fn not in under_set]
        focus_leaves = {id(f) for f, fn, _ in resolved if fn is None}
        # leaf roots no op uses (their node is not in `full`, so `rest` does not count them)
        extra_leaves = [t for t in leaf_roots if id(t) not in focus_leaves and id(t) not in accumulators]
        self.above = (rest, above, extra_leaves, capped)
        for f, fn, name in resolved:
            if fn is None:   # a leaf root with no node of its own: its box
                if id(f) not in self.leaf_box and not self._full():
                    self.leaf_name.setdefault(id(f), name)
                    self._new_leaf(f)
                continue
            _, over = self._visit(fn, given=True)
            if over:
                self.hidden.append(fn)

    def breadth_first(self) -> None:
        """Phase 2: every op's inputs, breadth-first, up to max_nodes; edges in discovery order."""
        snap = self.snap
        while self.queue:
            fn, nid = self.queue.popleft()
            for nxt, _ in fn.next_functions:
                if nxt is None or not self.options.follows(nxt):   # out of a module focused on: summarise_outside
                    continue
                src, over = self._visit(nxt)
                if over:
                    self.hidden.append(nxt)
                    if nid not in self.cut_set:
                        self.cut_set.add(nid)
                        snap.cut_at.append(nid)
                    continue
                if src is None:      # hidden by an option
                    continue
                if (src, nid) not in self.edge_set:
                    self.edge_set.add((src, nid))
                    snap.edges.append((src, nid))
                snap.ops[nid].inputs.append(src)

    def attach_named_tensors(self) -> None:
        """Phase 3: named non-leaf tensors (roots, retained intermediates) hang off the op
        that made them."""
        snap = self.snap
        for fn, named in self.by_fn.items():
            op_id = self.node_id.get(fn)
            if op_id is None:
                continue
            for n, t in named:
                role = Role.OUTPUT if n in self.root_names else Role.INTERMEDIATE
                tid = f"t_{op_id}_{len(snap.ops[op_id].produces)}"
                snap.tensors[tid] = _tensor_box(tid, n, role, t, made_by=op_id)
                snap.ops[op_id].produces.append(n)
                snap.edges.append((op_id, tid))

    def record_holders(self) -> None:
        """Phase 3b: who else holds each saved buffer (issue 20 §2).

        For a tensor read held now: the leaves, named variables and other drawn nodes that
        share its storage, kept in its node's metadata with a weak reference to the storage.
        For a slot read FREED whose node an earlier walk saw held: `Saved.held_by`, those of
        the holders still holding it (a leaf or variable still alive, a node whose slot is
        still held), () when the storage itself is gone (only the graph held it: memory was
        returned). A slot no earlier walk saw held keeps held_by None: unknown, never guessed."""
        storage_of = _storage_key
        leaves: dict = {}
        for nid, leaf in self.leaf_tensor.items():
            leaves.setdefault(storage_of(leaf), []).append((self.snap.tensors[nid].name, leaf))
        named: dict = {}
        for name, t in self.names.items():
            if not (t.is_leaf and t.requires_grad):   # a leaf is said as a leaf
                named.setdefault(storage_of(t), []).append((name, t))
        by_storage: dict = {}
        for (fn, slot), (t, key) in self.held_now.items():      # key: its _storage_key, read by _tensor_saved
            by_storage.setdefault(key, []).append((fn, slot, t))
        for key, slots in by_storage.items():
            if key is None:
                continue
            # one list of holders per storage, shared by its slots (each slot's own node is left
            # out when read: _still_holding), so k slots of one buffer cost k, not k squared
            keys = {fn: self.snap.node_keys[self.node_id[fn]] for fn, _, _ in slots}   # each node_key(fn), from _visit
            holders = [(f"leaf {n}", weakref.ref(v), None) for n, v in leaves.get(key, ())]
            holders += [(f"variable {n}", weakref.ref(v), None) for n, v in named.get(key, ())]
            holders += [(f"node {fn.name()}", None, (keys[fn], s2)) for fn, s2, _ in slots]
            storage_ref = weakref.ref(slots[0][2].untyped_storage())
            for fn, slot, _ in slots:
                try:
                    fn.metadata.setdefault(_HOLDERS_KEY, {})[slot] = (storage_ref, holders, keys[fn])
                except (AttributeError, RuntimeError, TypeError):
                    continue
        self.held_now = {}
        if not self.any_freed:      # no FREED row to say who still holds its buffer (a walk before backward)
            return
        node_keys = self.snap.node_keys
        held_now = {(node_keys[i], s.slot) for i, op in self.snap.ops.items()
                    for s in op.saved if s.state is HELD_STATE and i in node_keys}
        alive_cache: dict = {}
        for fn, nid in self.node_id.items():
            op = self.snap.ops.get(nid)
            if op is None or not op.saved or FREED_STATE not in {s.state for s in op.saved}:
                continue
            try:
                records = fn.metadata.get(_HOLDERS_KEY, {})
            except (AttributeError, RuntimeError):
                continue
            op.saved = [dataclasses.replace(s, held_by=_still_holding(records[s.slot], held_now, alive_cache))
                        if s.state is SavedState.FREED and s.slot in records else s for s in op.saved]

    def count_hidden(self, earlier: Snapshot | None = None) -> None:
        """Phase 4: the nodes beyond the cap, counted by type (iteratively, up to COUNT_LIMIT);
        taken from `earlier` when it drew the very same nodes (snapshot_with_ids)."""
        snap = self.snap
        snap.total_nodes = len(snap.ops) + len(self.leaf_box) + len(snap.params_hidden)
        if not (self.hidden or self.hidden_leaves):
            return
        snap.truncated = True
        if (earlier is not None and earlier.truncated and earlier.options == self.options
                and earlier.params_hidden == snap.params_hidden and earlier.cut_at == snap.cut_at
                and earlier.node_keys == snap.node_keys):
            snap.hidden_by_type.update(earlier.hidden_by_type)
            snap.count_capped = earlier.count_capped
            snap.total_nodes = earlier.total_nodes
            return
        seen = set(self.node_id) | self.not_shown
        stack = list(self.hidden)
        keep = []
        leaves = set(self.leaf_box)  # ids of leaf tensors drawn or counted: each counts once
        for t in self.hidden_leaves:
            if id(t) not in leaves:
                leaves.add(id(t))
                snap.hidden_by_type["leaf"] += 1
        by_type = snap.hidden_by_type
        push, pop, mark, keep_it = stack.append, stack.pop, seen.add, keep.append
        while stack:      # up to 20,000 nodes: the loop is kept tight
            fn = pop()
            if fn in seen:
                continue
            mark(fn)
            keep_it(fn)
            if is_leaf_node(fn):
                if id(fn.variable) in leaves:
                    continue  # a leaf passed as a root: drawn or counted already
                leaves.add(id(fn.variable))
                by_type["leaf"] += 1
            else:
                by_type[fn.name()] += 1
            if len(seen) >= COUNT_LIMIT:
                snap.count_capped = True
                break
            for n, _ in fn.next_functions:
                if n is not None and n not in seen and self.options.follows(n):
                    push(n)
        snap.total_nodes += sum(by_type.values())

    def summarise_above(self) -> None:
        """Phase 5 with focus=: what lies between the roots and the focus, counted by type,
        and the drawn boxes it hangs under (each focus: its named tensor's box, or its node)."""
        if self.focus is None:
            return
        rest, above, extra_leaves, capped = self.above
        self.above = None
        if not rest and not extra_leaves:
            return
        kinds: Counter[str] = Counter("leaf" if is_leaf_node(fn) else fn.name()
                                      for fn in rest)
        kinds["leaf"] += len(extra_leaves)
        kinds = +kinds
        between = sum(1 for fn in rest if fn in above)
        into = []
        for f, fn, name in self.focus:
            nid = self.node_id.get(fn) if fn is not None else self.leaf_box.get(id(f))
            if nid is None:
                continue
            box = next((t.id for t in self.snap.tensors.values() if t.made_by == nid and t.name == name), nid)
            into.append(box)
        self.snap.above = AboveFocus(
            roots=tuple(self.root_names), focus=tuple(n for _, _, n in self.focus), into=tuple(into),
            between=between, beside=len(rest) + len(extra_leaves) - between,
            by_type=tuple(sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0]))), capped=capped)

    # ---- a module focused on by path (DrawOptions.within): the walk stops at its boundary --------
    def summarise_outside(self) -> None:
        """Phase 6 with a module focus (DrawOptions.within, which breadth_first and count_hidden
        follow no input out of): what comes into the module from outside, counted (up to
        COUNT_LIMIT) in Snapshot.outside, its sources named by the scope; the focus named by its path.
        The module's nodes are found again here, past the cap too, so the count does not depend on it."""
        within = self.options.within
        if within is None or self.focus is None:
            return
        if self.snap.above is not None:
            self.snap.above = dataclasses.replace(self.snap.above, focus=(within.path,))
        inside, stack, crossings, into = set(), [fn for _, fn, _ in self.focus if fn is not None], {}, {}
        while stack:
            fn = stack.pop()
            if fn in inside:
                continue
            inside.add(fn)
            for n, _ in fn.next_functions:
                if n is None:
                    continue
                if within.holds(n):
                    stack.append(n)
                else:
                    crossings.setdefault(n, None)
                    if fn in self.node_id:
                        into.setdefault(self.node_id[fn], None)
        if not crossings:
            return
        before, capped = nodes_under(list(crossings))
        before = [fn for fn in before if fn not in inside]
        kinds: Counter[str] = Counter("leaf" if is_leaf_node(fn) else fn.name() for fn in before)
        sources = tuple(dict.fromkeys(within.source(fn) for fn in crossings))
        self.snap.outside = OutsideScope(
            scope=within.path, sources=sources, into=tuple(i for i in self.snap.ops if i in into),
            inputs=len(crossings), before=len(before) - len(crossings),
            by_type=tuple(sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0]))), capped=capped)


def _tensor_box(nid, name, role, t, made_by=None) -> TensorBox:
    refuse_nested(t, f"the {role.value} {name!r}" if role is not Role.LEAF else f"a leaf of the graph ({name})")
    grad = None
    if t.is_leaf or t.retains_grad:
        g = t.grad  # no warning: leaves and retained tensors may be read
        grad = None if g is None else fmt_values(g)
    return TensorBox(id=nid, name=name, role=role, shape=tuple(t.shape), dtype=dtype_name(t.dtype),
                     requires_grad=t.requires_grad, retains_grad=bool(t.retains_grad) and not t.is_leaf,
                     grad=grad, made_by=made_by)
