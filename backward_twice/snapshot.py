"""The data model of a graph picture, and the formatters of its small values.

A `Snapshot` is what `backward_twice.walk.snapshot` reads from a live autograd graph: names,
shapes and states only, no reference to the graph. Everything that draws or describes a
graph (`render`, `graph`, `stepper`) reads a Snapshot, never the graph.

    from backward_twice.snapshot import fmt_bytes      # 1536 -> '1.5 KiB'

Node ids ('op3', 'leaf1', ...) are made by the walk and are opaque everywhere else: what a
node is comes from `Snapshot.role(node_id)`.
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import gc
import math
from collections import Counter, deque
from dataclasses import dataclass, field
from enum import StrEnum

import torch


class GraphInputError(ValueError):
    """Raised for input the renderer cannot draw, with a message saying what to do."""


class SavedState(StrEnum):
    """What became of something a node saved for backward. A str: `state == "freed"` holds."""

    HELD = "held"              # a tensor still in memory (possibly changed in place since saved)
    FREED = "freed"            # a tensor backward released: reading it raises
    UNREADABLE = "unreadable"  # a tensor whose reading raised something else (a failing hook, ...)
    RECOMPUTED = "recomputed"  # a tensor a non-reentrant checkpoint recomputes in backward: not held
    VALUE = "value"            # not a tensor: a number, a size, a flag


class Role(StrEnum):
    """What a node of a snapshot is. A str: `role == "leaf"` holds."""

    OP = "op"                      # a grad_fn node (an entry of Snapshot.ops)
    LEAF = "leaf"                  # a leaf tensor (requires_grad, no grad_fn): its AccumulateGrad
    OUTPUT = "output"              # a named tensor passed as a root
    INTERMEDIATE = "intermediate"  # another named non-leaf tensor (e.g. one that retains grad)


NAMED_TENSOR_ROLES = frozenset({Role.OUTPUT, Role.INTERMEDIATE})   # boxes hanging off the op that made them


@dataclass(frozen=True)
class Saved:
    """One thing an op node saved for backward."""

    slot: str                  # 'self', 'other', 'result', 'saved_tensors[0]', 'exponent', ...
    is_tensor: bool
    state: SavedState          # HELD / FREED / UNREADABLE for tensors, VALUE for non-tensors
    shape: tuple[int, ...] | None = None
    dtype: str | None = None
    # its bytes: what its view reads (shape x element size), but never more than the buffer
    # (storage) behind it: an expanded, stride-0 mask holds only its small buffer. On the meta
    # device: what it would take (nothing is allocated).
    nbytes: int | None = None
    # the bytes its view reads when they are more than its buffer's (an expanded view), else None
    view_nbytes: int | None = None
    alias: str | None = None   # a named tensor sharing this storage ('a', 'c', 'w.T', ...)
    value: str | None = None   # printed form of a non-tensor value; for UNREADABLE, what reading raised
    modified: str | None = None  # held, but changed in place since saved: "version 1 -> 2"
    alias_view: bool = False   # True: same memory as `alias`, but another shape/stride/offset
    # which buffer (storage) it is, and that buffer's size: two slots with the same `storage` hold
    # one buffer (a ReLU's result that the next layer also saved). Internal only (an address):
    # never printed, not compared.
    storage: tuple | None = dataclasses.field(default=None, compare=False, repr=False)
    # whose memory it is (SavedKind), None when not known (not read: freed before any walk saw it)
    kind: str | None = None
    # FREED only: who still holds the buffer the graph let go of. None: unknown (no walk saw it
    # held); (): nobody, only the graph held it, so its memory was returned; else words such as
    # "leaf x", "node MulBackward0", "variable a" (filled by backward_twice.walk when an earlier walk of
    # the same graph saw it held: watch, compare with a before snapshot, the stepper)
    held_by: tuple[str, ...] | None = None

    def __post_init__(self):
        if type(self.state) is not SavedState:
            object.__setattr__(self, "state", SavedState(self.state))   # 'held' -> SavedState.HELD; a typo raises

    @classmethod
    def made(cls, **values) -> Saved:
        """Saved(**values) for the walk, which makes one per saved tensor: the fields set at once, not
        one frozen-dataclass __setattr__ call each (3.9 us a Saved, a tenth of a small picture's
        description). values: fields of Saved only, `state` a SavedState."""
        saved = object.__new__(cls)
        fields = saved.__dict__
        fields.update(_SAVED_DEFAULTS)
        fields.update(values)
        return saved

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
        if self.state is SavedState.UNREADABLE:   # walk.NOT_UNPACKED: it was not read at all
            read = "" if (self.value or "").startswith("not unpacked") else "reading it raised "
            stale = f" ({read}{self.value})"
        if self.state is SavedState.RECOMPUTED:
            return f"{self.slot}: {self.value}, not held"
        if self.shape is None:
            return f"{self.slot}: size unknown{stale}"
        alias = f" ({self.alias_note()})" if self.alias else ""
        return f"{self.slot}{alias}: {fmt_shape(self.shape)} {self.dtype} {self.size_words()}{stale}"

    def size_words(self) -> str:
        """'256 B', or '256 B buffer, viewed as 4.0 KiB' when the saved view reads more than the
        buffer behind it (an expanded, stride-0 mask)."""
        if self.view_nbytes is None:
            return fmt_bytes(self.nbytes)
        return f"{fmt_bytes(self.nbytes)} buffer, viewed as {fmt_bytes(self.view_nbytes)}"


_SAVED_DEFAULTS = {f.name: f.default for f in dataclasses.fields(Saved)}


class SavedKind(StrEnum):
    """Whose memory a saved tensor is: what decides whether backward can return it."""

    ACTIVATION = "activation"  # made by the graph (an op's input or output): backward frees it
    LEAF = "leaf"              # a leaf that requires grad (a parameter), or a view of one: saved by
                               # reference, it outlives backward (the leaf holds it)
    INPUT = "input"            # made outside the graph, no grad (data, an index, a constant): saved
                               # by reference, it outlives backward while anything else holds it
    FUNCTION = "function"      # kept in an autograd.Function's ctx.saved_tensors (a compiled graph, a
                               # reentrant checkpoint, a custom Function), no grad_fn, no name holds it:
                               # made inside its forward (an intermediate, which backward frees) or
                               # data given to it; the graph does not say which


BY_REFERENCE = frozenset({SavedKind.LEAF, SavedKind.INPUT})


def fmt_total(nbytes: int, unknown: int) -> str:
    """A sum of sizes, honest about sizes never recorded: '12 B', 'at least 12 B (2 sizes
    unknown)', or '2 sizes unknown' when none is known. Never '0 B' for unknown sizes."""
    if not unknown:
        return fmt_bytes(nbytes)
    what = "size unknown" if unknown == 1 else f"{unknown} sizes unknown"
    return f"at least {fmt_bytes(nbytes)} ({what})" if nbytes else what


@dataclass(frozen=True)
class MemoryTotals:
    """What the saved tensors of a snapshot (or of some of its ops) hold, a buffer several
    slots hold counted once: held bytes split by SavedKind, freed bytes, and how many sizes
    are unknown on each side (never counted as 0 B)."""

    held: dict                 # {SavedKind value: bytes}
    held_unknown: int          # held slots whose size was not recorded
    freed: int
    freed_unknown: int         # freed slots whose size no earlier walk recorded
    freed_kept: int = 0        # freed bytes someone else still holds (Saved.held_by): not returned

    @property
    def activations(self) -> int:
        return self.held.get(SavedKind.ACTIVATION, 0)

    @property
    def leaves(self) -> int:
        """Held bytes of leaves (parameters) saved by reference: they outlive backward."""
        return self.held.get(SavedKind.LEAF, 0)

    @property
    def inputs(self) -> int:
        """Held bytes of inputs made outside the graph: backward frees them unless something
        else (a variable, a dataset) still holds them."""
        return self.held.get(SavedKind.INPUT, 0)

    @property
    def in_function(self) -> int:
        """Held bytes an autograd.Function keeps that may be its own intermediates or data given
        to it (SavedKind.FUNCTION): backward frees them unless something else holds them."""
        return self.held.get(SavedKind.FUNCTION, 0)

    @property
    def by_reference(self) -> int:
        """Held bytes of leaves and inputs saved by reference (not made by the graph)."""
        return self.leaves + self.inputs

    def words(self) -> str:
        """'held 296.0 KiB: 8.0 KiB activations (backward frees them), 288.0 KiB of leaves
        (parameters) saved by reference (they outlive backward)'."""
        total = sum(self.held.values())
        parts = [f"{fmt_bytes(self.activations)} activations (backward frees them)"]
        if self.leaves:
            parts.append(f"{fmt_bytes(self.leaves)} of leaves (parameters) saved by reference "
                         "(they outlive backward)")
        if self.inputs:
            parts.append(f"{fmt_bytes(self.inputs)} of inputs made outside the graph (freed too, "
                         "unless something else holds them)")
        if self.in_function:
            parts.append(f"{fmt_bytes(self.in_function)} kept by an autograd.Function, made inside it or given "
                         "to it (not told apart; freed too, unless something else holds them)")
        if self.held.get("unknown"):
            parts.append(f"{fmt_bytes(self.held['unknown'])} of unknown origin")
        return f"held {fmt_total(total, self.held_unknown)}: " + ", ".join(parts)

    def brief(self, short: bool = False) -> str:
        """'296.0 KiB held (8.0 KiB activations)', '121.5 KiB freed (40.0 KiB of it still held
        elsewhere)': one line for a box that stands for several ops (a module call, a folded run);
        a freed size no walk saw is never 0 B. short: '0 B held, ' left out when something was freed
        (a box of totals only, in a picture whose width is tight)."""
        out = f"{fmt_total(sum(self.held.values()), self.held_unknown)} held"
        if short and not sum(self.held.values()) and not self.held_unknown and (self.freed or self.freed_unknown):
            return self._freed_words(short).removeprefix(", ")
        if self.by_reference or self.in_function:
            inside = f", {fmt_bytes(self.in_function)} kept by an autograd.Function" if self.in_function else ""
            out += f" ({fmt_bytes(self.activations)} activations{inside})"
        return out + self._freed_words(short)

    def _freed_words(self, short: bool = False) -> str:
        if self.freed:
            out = f", {fmt_total(self.freed, self.freed_unknown)} freed"
            if self.freed_kept:      # the graph let go, but a leaf or a variable still holds it
                out += f" ({fmt_bytes(self.freed_kept)}{'' if short else ' of it'} still held elsewhere)"
            return out
        if self.freed_unknown:
            return f", {self.freed_unknown} freed (size{'s' * (self.freed_unknown > 1)} unknown)"
        return ""


@dataclass
class Op:
    id: str
    name: str
    inputs: list[str] = field(default_factory=list)    # ids of ops/leaves feeding this op
    saved: list[Saved] = field(default_factory=list)
    produces: list[str] = field(default_factory=list)  # names of named tensors it made


@dataclass
class TensorBox:
    id: str
    name: str
    role: Role                 # LEAF, OUTPUT or INTERMEDIATE
    shape: tuple[int, ...]
    dtype: str
    requires_grad: bool
    retains_grad: bool
    grad: str | None           # formatted .grad, or None when there is none
    made_by: str | None = None  # op id for non-leaf tensors

    def __post_init__(self):
        self.role = Role(self.role)
        if self.role is Role.OP:
            raise ValueError("a TensorBox is a leaf, an output or an intermediate, not an op")


@dataclass(frozen=True)
class AboveFocus:
    """What a snapshot drawn with `focus=` leaves out: every node that is not under the focus
    (does not feed it), counted. `between` of them lie on a path from a root to the focus (the
    nodes "above" it), `beside` do not (another branch of the roots)."""

    roots: tuple[str, ...]          # names of the roots the graph was walked from
    focus: tuple[str, ...]          # names of the focus tensors (or nodes), as given
    into: tuple[str, ...]           # drawn ids whose outputs flow into the part left out
    between: int                    # nodes on a path from a root to the focus
    beside: int                     # other nodes not under the focus
    by_type: tuple[tuple[str, int], ...] = ()   # (node name or 'leaf', count), most first
    capped: bool = False            # the walk stopped at walk.COUNT_LIMIT: the counts are "at least"

    def headline(self) -> str:
        """'9 nodes from h to loss' (and ', 1 beside them' when some lie on other branches):
        in the direction a picture's arrows run, from the focus down to the roots."""
        plus = "+" if self.capped else ""
        text = (f"{self.between:,}{plus} node{'s' * (self.between != 1)} from {', '.join(self.focus)} "
                f"to {', '.join(self.roots)}")
        if self.beside:
            text += f", {self.beside:,}{plus} beside them"
        return text

    def kinds(self, shown: int | None = None) -> str:
        """'TanhBackward0 x29, AddBackward0 x29, ...'."""
        items = self.by_type if shown is None else self.by_type[:shown]
        more = ", ..." if shown is not None and len(self.by_type) > shown else ""
        return ", ".join(f"{k} x{n}" for k, n in items) + more


@dataclass(frozen=True)
class OutsideScope:
    """What a snapshot drawn with a module focus (focus='h.3.attn') leaves out below the module: what
    comes into it from outside, cut at its boundary and counted. `sources` say where its inputs
    were made (the module call, 'h.3.ln_1', or the op); `before` nodes lie under them."""

    scope: str                      # the module path focused on ('h.3.attn')
    sources: tuple[str, ...]        # where the inputs from outside were made, in the walk's order
    into: tuple[str, ...]           # drawn op ids that take an input from outside
    inputs: int                     # the nodes at the boundary (each an input from outside)
    before: int                     # the nodes under them, not drawn either
    by_type: tuple[tuple[str, int], ...] = ()   # (node name or 'leaf', count), most first
    capped: bool = False            # the count stopped at walk.COUNT_LIMIT: "at least"

    def headline(self) -> str:
        """'input from h.3.ln_1 (LayerNorm), and 220 nodes before it'."""
        plus = "+" if self.capped else ""
        first = self.sources[0] if len(self.sources) == 1 else \
            ", ".join(self.sources[:-1]) + " and " + self.sources[-1]
        many = self.inputs > 1 or len(self.sources) > 1
        return (f"input{'s' * many} from {first}, and {self.before:,}{plus} "
                f"node{'s' * (self.before != 1)} before {'them' if many else 'it'}")

    def kinds(self, shown: int | None = None) -> str:
        """'ViewBackward0 x40, leaf x30, ...'."""
        items = self.by_type if shown is None else self.by_type[:shown]
        more = ", ..." if shown is not None and len(self.by_type) > shown else ""
        return ", ".join(f"{k} x{n}" for k, n in items) + more


@dataclass(frozen=True, eq=False)
class DrawOptions:
    """What a picture of a graph shows: one value that draw(), watch() and the other entry points
    hand to the walk, which records it on the Snapshot the scene is built from. Every option goes
    through `shows`, the one visibility rule, before the cap: max_nodes counts only the boxes
    drawn, so every option composes with max_nodes and focus by construction.

    max_nodes: at most this many boxes of the graph's nodes (ops and leaves) are drawn, the rest
        counted in one box. focus: a tensor or node (or a list) the roots were computed from: only
        what feeds it is walked. hide_params: leaves (parameters, each an AccumulateGrad) are not
        drawn, only counted and named in the text form; a leaf given as a root or a focus is.
        within: with a module focus, the module's scope (backward_twice.modules.ModuleScope): the
        walk follows an op's inputs only into the ops made inside it (and leaves); what comes
        from outside is counted in one box (Snapshot.outside)."""

    max_nodes: int = 300
    focus: object = None
    hide_params: bool = False
    within: object = None

    def follows(self, fn) -> bool:
        """Whether the walk follows an op's input into node `fn` (a live autograd node): always,
        except out of the module focused on (`within`), whose boundary it stops at."""
        return self.within is None or self.within.holds(fn)

    def shows(self, leaf: bool, given: bool = False) -> bool:
        """Whether a node of the graph gets a box (the cap aside): `leaf` for a leaf's
        AccumulateGrad, `given` for a node the caller passed (a root or a focus)."""
        return given or not (leaf and self.hide_params)


_ONCE: dict | None = None     # while worked_out_once() is on: {(function, id(snapshot)): (result, snapshot)}


@contextlib.contextmanager
def worked_out_once():
    """While on (one picture's DOT: render.to_dot), a fact a pass works out from a snapshot (its shared
    buffers, a leaf's far uses, the folded transposes) is worked out once per snapshot, however many
    passes ask for it (the boxes, the references, the legend). The snapshot is not changed while a
    picture is drawn; each result is read, never changed, by the passes."""
    global _ONCE
    outer = _ONCE
    if outer is None:
        _ONCE = {}
    try:
        yield
    finally:
        _ONCE = outer


def once_per_snapshot(fn):
    """fn(snapshot) remembered while worked_out_once() is on (called with other arguments: not)."""
    @functools.wraps(fn)
    def remembered(snap, *args, **kwargs):
        if _ONCE is None or args or kwargs:
            return fn(snap, *args, **kwargs)
        key = (fn, id(snap))
        hit = _ONCE.get(key)
        if hit is None:
            hit = _ONCE[key] = (fn(snap), snap)     # the snapshot kept: its id is not reused meanwhile
        return hit[0]
    return remembered


@dataclass
class Snapshot:
    """Everything a picture of the graph needs, with no reference to the graph."""

    roots: list[str]            # names of the roots, in the order given
    ops: dict[str, Op]          # id -> Op, in discovery order
    tensors: dict[str, TensorBox]   # id -> TensorBox: leaves and named tensors
    edges: list[tuple[str, str]]    # (from_id, to_id): forward direction, input -> op -> output
    truncated: bool = False
    total_nodes: int = 0        # ops + leaves in the whole graph, or under the focus (up to walk.COUNT_LIMIT)
    hidden_by_type: Counter[str] = field(default_factory=Counter)
    count_capped: bool = False
    cut_at: list[str] = field(default_factory=list)  # drawn op ids with inputs beyond the cap
    above: AboveFocus | None = None   # drawn with focus=: what lies between the roots and the focus
    outside: OutsideScope | None = None   # drawn with a module focus: what comes into the module, counted
    # True when a saved tensor is on the meta device: its bytes are what it would take, none allocated
    on_meta: bool = False
    # op ids whose saved tensors a non-reentrant torch.utils.checkpoint recomputes in backward
    # (SavedState.RECOMPUTED): a checkpointed region, which holds no memory for them
    recomputed_in_backward: list[str] = field(default_factory=list)
    # which live node each drawn id was (walk.node_key: an op's name and creation number, a leaf's
    # identity), so a BackwardTrace of the same graph maps onto these ids. Internal only: never
    # printed, not compared.
    node_keys: dict[str, tuple] = field(default_factory=dict, compare=False, repr=False)
    # names of the leaves DrawOptions.hide_params left out (counted in total_nodes, not drawn)
    params_hidden: list[str] = field(default_factory=list)
    # the options it was walked with (None: a Snapshot built by hand)
    options: DrawOptions | None = field(default=None, compare=False, repr=False)

    # -- what each node is ----------------------------------------------------------
    def role(self, node_id: str) -> Role:
        """Role.OP for an op, else the role of the tensor box (KeyError for an unknown id)."""
        return Role.OP if node_id in self.ops else self.tensors[node_id].role

    @property
    def leaf_count(self) -> int:
        """Leaf boxes drawn."""
        return sum(t.role is Role.LEAF for t in self.tensors.values())

    @property
    def hidden_count(self) -> int:
        """Ops and leaves beyond max_nodes: counted in `total_nodes`, not drawn (the leaves an
        option hid apart: `params_hidden`)."""
        return self.total_nodes - len(self.ops) - self.leaf_count - len(self.params_hidden)

    # -- the graph's shape, read from the ids (no live graph needed) ---------------
    def under(self, start_ids) -> set[str]:
        """Every id reachable from `start_ids` through op inputs (what feeds them), starts included."""
        seen, stack = set(), list(start_ids)
        while stack:
            nid = stack.pop()
            if nid in seen:
                continue
            seen.add(nid)
            op = self.ops.get(nid)
            if op is not None:
                stack.extend(op.inputs)
        return seen

    def reaching(self, target_id: str) -> set[str]:
        """The ids of the ops `target_id` feeds, directly or not (its users, theirs, ...), itself included."""
        users: dict[str, list[str]] = {}
        for op in self.ops.values():
            for i in op.inputs:
                users.setdefault(i, []).append(op.id)
        seen, stack = set(), [target_id]
        while stack:
            nid = stack.pop()
            if nid not in seen:
                seen.add(nid)
                stack.extend(users.get(nid, ()))
        return seen

    def path(self, from_id: str, to_id: str) -> list[str]:
        """The shortest chain of ids from `from_id` down through op inputs to `to_id` ([] if none)."""
        parent = {from_id: None}
        queue = deque([from_id])
        while queue and to_id not in parent:
            op = self.ops.get(queue.popleft())
            for i in op.inputs if op is not None else ():
                if i not in parent:
                    parent[i] = op.id
                    queue.append(i)
        if to_id not in parent:
            return []
        out, nid = [], to_id
        while nid is not None:
            out.append(nid)
            nid = parent[nid]
        return out[::-1]

    # -- summaries used by text, pictures, tests ---------------------------------
    def saved_tensors(self, ops=None):
        """(op, saved) for every saved tensor slot; ops: only those of these op ids."""
        for op in (self.ops.values() if ops is None else (self.ops[i] for i in ops if i in self.ops)):
            for s in op.saved:
                if s.is_tensor:
                    yield op, s

    def bytes_by_state(self, ops=None) -> dict[str, int]:
        """{"held": bytes, "freed": bytes}, plus "unreadable" only when present (plain str keys)."""
        out = {"held": 0, "freed": 0}
        for _, s in self.saved_tensors(ops):
            out[s.state.value] = out.get(s.state.value, 0) + (s.nbytes or 0)
        return out

    @once_per_snapshot
    def shared_buffers(self, ops=None) -> dict[tuple, list[tuple[Op, Saved]]]:
        """{buffer: [(op, saved), ...]} for buffers two or more saved slots hold (per state:
        a freed slot's buffer is the one an earlier walk saw, and its memory may be reused)."""
        by: dict[tuple, list] = {}
        for op, s in self.saved_tensors(ops):
            if s.storage is not None and s.state in (SavedState.HELD, SavedState.FREED):
                by.setdefault((s.state, s.storage), []).append((op, s))
        return {k: v for k, v in by.items() if len(v) > 1}

    def unique_bytes_by_state(self, ops=None) -> dict[str, int]:
        """bytes_by_state() with a buffer several slots hold counted once (at the largest
        size a slot shows of it); ops: only the slots of these op ids (a module's share)."""
        out = self.bytes_by_state(ops)
        for (state, _), slots in self.shared_buffers(ops).items():
            sizes = [s.nbytes or 0 for _, s in slots]
            out[state.value] -= sum(sizes) - max(sizes)
        return out

    def memory(self, ops=None) -> MemoryTotals:
        """Held bytes by SavedKind, freed bytes, unknown sizes counted apart (ops: these op ids
        only); a buffer several slots hold counts once, at the largest size a slot shows of it
        (as unique_bytes_by_state), under that slot's kind."""
        biggest: dict = {}       # (state, buffer) -> the slot with the largest size
        held_unknown = freed_unknown = 0
        for i, (_, s) in enumerate(self.saved_tensors(ops)):
            if s.state not in (SavedState.HELD, SavedState.FREED):
                continue
            if s.nbytes is None:
                held_unknown += s.state is SavedState.HELD
                freed_unknown += s.state is SavedState.FREED
                continue
            key = (s.state, s.storage if s.storage is not None else ("slot", i))
            if key not in biggest or s.nbytes > biggest[key].nbytes:
                biggest[key] = s
        held: dict = {}
        for s in biggest.values():
            if s.state is SavedState.HELD:
                kind = s.kind or "unknown"
                held[kind] = held.get(kind, 0) + s.nbytes
        freed = sum(s.nbytes for s in biggest.values() if s.state is SavedState.FREED)
        kept = sum(s.nbytes for s in biggest.values() if s.state is SavedState.FREED and s.held_by)
        return MemoryTotals(held, held_unknown, freed, freed_unknown, kept)

    def count_by_state(self) -> dict[str, int]:
        """{"held": n, "freed": n}, plus "unreadable" only when present (plain str keys)."""
        out = {"held": 0, "freed": 0}
        for _, s in self.saved_tensors():
            out[s.state.value] = out.get(s.state.value, 0) + 1
        return out

    # -- what changed since an earlier snapshot of the same graph ------------------
    def freed_since(self, earlier: Snapshot) -> list[tuple[Op, Saved]]:
        """[(op, saved)]: saved tensors held in `earlier` and freed now (matched by op id, slot)."""
        was = {(op.id, s.slot): s.state for op, s in earlier.saved_tensors()}
        return [(op, s) for op, s in self.saved_tensors()
                if s.state is SavedState.FREED and was.get((op.id, s.slot)) is SavedState.HELD]

    def modified_since(self, earlier: Snapshot) -> list[tuple[Op, Saved]]:
        """[(op, saved)]: saved tensors changed in place that `earlier` did not show changed."""
        was = {(op.id, s.slot): s.modified for op, s in earlier.saved_tensors()}
        return [(op, s) for op, s in self.saved_tensors() if s.modified and not was.get((op.id, s.slot))]

    def grad_changes_since(self, earlier: Snapshot) -> list[str]:
        """['x.grad: None -> [2, 4]', ...] for leaves and retained tensors whose .grad changed."""
        was = {t.name: t.grad for t in earlier.tensors.values()}
        return [f"{t.name}.grad: {was.get(t.name)} -> {t.grad}" for t in self.tensors.values()
                if (t.role is Role.LEAF or t.retains_grad) and t.grad != was.get(t.name)]

    def with_saved_from(self, other: Snapshot) -> Snapshot:
        """This snapshot (its tensors, their .grad) with `other`'s saved-tensor states, for the
        ops both have under the same id and name (two snapshots of one graph)."""
        ops = {}
        for oid, op in self.ops.items():
            theirs = other.ops.get(oid)
            same = theirs is not None and theirs.name == op.name
            ops[oid] = dataclasses.replace(op, saved=theirs.saved) if same else op
        return dataclasses.replace(self, ops=ops)


@contextlib.contextmanager
def gc_paused():
    """Python's cyclic garbage collector paused for a walk or a picture's DOT, restored after.

    Both make many objects that live until the walk or the DOT is done (Saved, Op, the scene's
    boxes, rows and spans; torch's objects for every node of a 20k-node graph) and make no
    reference cycle: the collector would only promote them, and enough promotions trigger a full
    collection of the whole process (with torch imported, about 165k objects, 40-80 ms each).
    Paused, they are freed by reference counting as usual; the collector resumes after."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


# --------------------------------------------------------------------------------
# formatting of small values: deterministic by construction
_SHAPES: dict[tuple, str] = {}


def fmt_shape(shape) -> str:
    key = tuple(shape) if type(shape) is not tuple else shape
    done = _SHAPES.get(key)
    if done is None:       # shapes repeat in a picture: each one formatted once (a bounded cache)
        done = "(" + ", ".join(str(int(d)) for d in shape) + ("," if len(shape) == 1 else "") + ")"
        if len(_SHAPES) < 4096:
            _SHAPES[key] = done
    return done


def fmt_bytes(n) -> str:
    """A byte count as people read it: B below 1 KiB, then KiB and MiB to one decimal; None (a size
    that could not be read) as "? B", never as 0 B.

    Example (run by tests/test_docstrings.py):

        >>> from backward_twice import fmt_bytes
        >>> fmt_bytes(1536), fmt_bytes(12), fmt_bytes(None)
        ('1.5 KiB', '12 B', '? B')
    """
    if n is None:
        return "? B"
    for unit, size in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


def fmt_number(v, digits: int = 3) -> str:
    """`digits` significant digits (3: what survives a float32 sum added up in another order, see
    fmt_values); a complex number as '1+2j' (each part so)."""
    if isinstance(v, complex):
        re_, im = fmt_number(v.real, digits), fmt_number(abs(v.imag), digits)
        return f"{re_}{'-' if v.imag < 0 else '+'}{im}j"
    v = float(v) + 0.0  # turns -0.0 into 0.0
    if v == 0 or not math.isfinite(v):
        return f"{v:g}"
    exp = math.floor(math.log10(abs(v)))
    if not -5 <= exp < 6:                       # 1.5e-07, 2.5e+08
        return f"{v:.{digits}g}"
    places = digits - 1 - exp                   # 1214 -> 1210 (not 1.21e+03), 0.0012345 -> 0.00123
    text = f"{round(v, places):.{max(places, 0)}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "0") else text


def _digits_beside(v: float, largest: float, digits: int = 3) -> int:
    """How many significant digits of `v` are facts when `largest` is the tensor's largest magnitude.

    A float32 result made by a sum (a matrix product, a reduction, a gradient added up over uses)
    changes in its last bits with the order the CPU's vector kernels add its terms in: by about
    float32's epsilon times the sum of the terms' magnitudes, which scales with the largest value in
    the tensor, not with the value itself. A small value made by cancellation ([1.07, -0.00063])
    keeps that absolute error, so its fourth digit differs between an AVX2 and an AVX-512 machine.
    So every value is printed to the resolution of the largest one's `digits` significant digits,
    with at least 1 digit (a nonzero value never prints as 0)."""
    if v == 0 or largest == 0 or not math.isfinite(v) or not math.isfinite(largest):
        return digits
    drop = math.floor(math.log10(largest)) - math.floor(math.log10(abs(v)))
    return max(1, min(digits, digits - drop))


def fmt_values(t: torch.Tensor, max_values: int = 8) -> str:
    """Values of a small tensor, or its shape and norm when it is big.

    Numbers are stable on any CPU: each to the resolution of the largest value's 3 significant
    digits (`_digits_beside`: [1.071, -0.0006303] prints as [1.07, -0.0006]). Complex values print
    as '1+2j' and their norm is the complex one (sqrt of the sum of |z|^2); a sparse tensor shows
    its layout, how many values it stores and their norm; a tensor with no data (device 'meta')
    says so.

    Example (run by tests/test_docstrings.py):

        >>> import torch
        >>> from backward_twice import fmt_values
        >>> fmt_values(torch.tensor([1.071, -0.0006303]))
        '[1.07, -0.0006]'
        >>> fmt_values(torch.ones(3, 4))
        '(3, 4) norm 3.46'
    """
    t = t.detach()
    if t.device.type == "meta":
        return f"{fmt_shape(t.shape)} on meta: no values"
    if t.layout is not torch.strided:
        return _fmt_sparse(t)
    if t.numel() <= max_values:
        if t.dim() == 0:
            return fmt_number(t.item())
        values = t.reshape(-1).tolist()
        if t.is_complex() or t.dtype == torch.bool:
            flat = ", ".join(fmt_number(v) for v in values)
        else:
            largest = max((abs(v) for v in values if math.isfinite(v)), default=0.0)
            flat = ", ".join(fmt_number(v, _digits_beside(v, largest)) for v in values)
        return f"[{flat}]" if t.dim() == 1 else f"[{flat}] {fmt_shape(t.shape)}"
    return f"{fmt_shape(t.shape)} norm {fmt_number(_norm(t))}"


def _norm(values: torch.Tensor) -> float:
    """The 2-norm in double precision (complex: of |z|); NaN for integer and bool tensors."""
    if values.is_complex():
        return torch.linalg.vector_norm(values.to(torch.complex128)).item()
    if values.is_floating_point():
        return torch.linalg.vector_norm(values.double()).item()
    return float("nan")


def _fmt_sparse(t: torch.Tensor) -> str:
    """'(4, 2) sparse_coo, 4 stored values, norm 2' (an nn.Embedding(sparse=True) grad)."""
    layout = str(t.layout).replace("torch.", "")
    try:
        values = t.coalesce().values() if t.layout is torch.sparse_coo else t.values()
    except RuntimeError:   # a layout with no .values()
        return f"{fmt_shape(t.shape)} {layout}"
    n = values.numel()
    return f"{fmt_shape(t.shape)} {layout}, {n} stored value{'s' * (n != 1)}, norm {fmt_number(_norm(values))}"


_DTYPES: dict = {}


def dtype_name(dtype) -> str:
    name = _DTYPES.get(dtype)
    if name is None:
        name = _DTYPES[dtype] = str(dtype).replace("torch.", "")
    return name


def saved_states(snap: Snapshot) -> dict[str, str]:
    """{'PowBackward0.self': 'held' or 'freed', ...} for every saved tensor of a snapshot
    (plain strings, so the dict prints as it reads).

    Example (run by tests/test_docstrings.py):

        >>> import torch, backward_twice as bt
        >>> a = torch.tensor([1.0, 2.0], requires_grad=True)
        >>> loss = (a * a).sum()
        >>> loss.backward()
        >>> bt.saved_states(bt.take_snapshot(loss))
        {'MulBackward0.other': 'freed', 'MulBackward0.self': 'freed'}
    """
    return {f"{op.name}.{s.slot}": s.state.value for op, s in snap.saved_tensors()}
