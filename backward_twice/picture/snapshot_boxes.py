"""The first pass: a Snapshot's ops and tensors as boxes, its edges as edges."""
from __future__ import annotations

from ..snapshot import NAMED_TENSOR_ROLES, Role, Saved, SavedState, Snapshot, fmt_shape
from .palette import EDGE, FREED, HELD, LEAF, MODIFIED, NAMED, OP, VALUE
from .scene import Box, Cell, Edge, Scene, Span, Table

GRAD_VALUES_SHOWN = 3     # a box shows at most this many numbers of a .grad (the text form: all)


def is_leaf(snap: Snapshot, node_id: str) -> bool:
    """The one test for "this node is a leaf tensor" in a picture."""
    return snap.role(node_id) is Role.LEAF


def shared_tag() -> list[Span]:
    return [Span("\u00a0"), Span("shared buffer", colour=VALUE, italic=True)]


_ABSENT = object()


def holder_words(s) -> str:
    """Who still holds a FREED buffer (Saved.held_by, when the walk knows): ' - memory returned'
    (only the graph held it), ' - still held by leaf x, no memory returned', ' - holder unknown'
    (drawn only after backward: never guessed); '' when the snapshot does not say."""
    held_by = getattr(s, "held_by", _ABSENT)
    if held_by is _ABSENT:
        return ""
    if held_by is None:
        return " - holder unknown"
    if not held_by:
        return " - memory returned"
    return f" - still held by {', '.join(held_by)}, no memory returned"


_FREED, _VALUE = SavedState.FREED, SavedState.VALUE   # read once: an Enum member
_RECOMPUTED, _UNREADABLE = SavedState.RECOMPUTED, SavedState.UNREADABLE      # looked up costs 60 ns a time


def saved_rows(op, shared=frozenset()) -> list[list[Cell]]:
    """One row per saved tensor (held, FREED, modified in place, unreadable), then settings."""
    rows = []
    values = []
    for s in op.saved:
        state = s.state
        if not s.is_tensor:
            if state is _VALUE:
                values.append(s)
            continue
        tag = shared_tag() if shared and s.slot in shared else []
        alias = f" {s.alias_note()}" if s.alias else ""
        if state is _FREED:
            size = alias + ("" if s.shape is None else f" {fmt_shape(s.shape)} {s.size_words()}")
            spans = [Span(f"saved {s.slot}{size}", strike=True), Span("\u00a0\u00a0"), Span("FREED", bold=True)] + tag
            holder = holder_words(s)
            if holder:             # on a line of its own: a FREED row no wider than before ('still
                # held by x' says no memory was returned: the text form says it in words)
                spans += [Span(br=True), Span(holder.removeprefix(" - ").removesuffix(", no memory returned"))]
            rows.append([Cell(spans, colour=FREED, size=10, align="LEFT")])
        elif s.modified:  # held, but changed in place since it was saved
            size = "" if s.shape is None else f": {fmt_shape(s.shape)} {s.dtype} {s.size_words()}"
            spans = [Span(f"saved {s.slot}{alias}{size}"), Span(br=True),
                     Span(f"MODIFIED IN PLACE since saved ({s.modified})", bold=True)]
            rows.append([Cell(spans, colour=MODIFIED, size=10, align="LEFT")])
        elif state is _RECOMPUTED:  # a checkpoint re-runs the forward for it in backward
            spans = [Span(f"saved {s.slot}: "), Span("recomputed in backward", bold=True),
                     Span(" (checkpoint), not held")]
            rows.append([Cell(spans, colour=VALUE, size=10, align="LEFT")])
        elif state is _UNREADABLE:  # reading it raised something we do not know
            spans = [Span(f"saved {s.slot}: "), Span("unreadable", bold=True), Span(f" ({s.value})")]
            rows.append([Cell(spans, colour=VALUE, size=10, align="LEFT")])
        else:     # the word HELD, not only green: no meaning by colour alone
            spans = [Span("HELD", bold=True), Span(f" {s.slot}{alias}: {fmt_shape(s.shape)} {s.dtype} {s.size_words()}")] + tag
            rows.append([Cell(spans, colour=HELD, size=10, align="LEFT")])
    if values:
        rows.extend(value_rows(values))
    return rows


# Settings at the value that changes nothing (x + 1 * y, 1 * x @ w + 1 * b): the text form lists them
DEFAULT_SETTINGS = {("alpha", "1"), ("beta", "1")}


def value_rows(values: list[Saved]) -> list[list[Cell]]:
    """The plain numbers an op saved, kept short: up to three settings (`exponent = 2`); size
    bookkeeping (`*_sym_sizes`), settings that change nothing (`alpha = 1`) and longer lists are
    left to the text form."""
    settings = [v for v in values if "sym_" not in v.slot and (v.slot, str(v.value)) not in DEFAULT_SETTINGS]
    if len(settings) > 3:
        return []
    return [[Cell([Span(f"{v.slot} = {v.value}", italic=True)], colour=VALUE, size=10, align="LEFT", setting=True)]
            for v in settings]


def op_box(op, shared=frozenset()) -> Box:
    freed = any(s.state is _FREED for s in op.saved)
    rows = [[Cell([Span(op.name, bold=True)], bg=OP)]] + saved_rows(op, shared)
    return Box(op.id, Table(rows, cellpadding=3, colour=FREED if freed else EDGE), "op")


def short_values(text: str | None, shown: int = GRAD_VALUES_SHOWN) -> str:
    """'[1, 2, 3, 4, 5, 6] (2, 3)' -> '[1, 2, 3, ...] (2, 3)', '[0.03659, -0.0008713]' ->
    '[0.0366, -0.000871]': a picture shows at most `shown` numbers of a gradient, each to 3
    significant digits (the text form keeps them all, to 4)."""
    if not text or not text.startswith("["):
        return str(text)
    close = text.find("]")
    if close < 0:
        return text
    values = [_short_number(v) for v in text[1:close].split(", ")]
    more = ", ..." if len(values) > shown else ""
    return "[" + ", ".join(values[:shown]) + more + "]" + text[close + 1:]


def _short_number(v: str) -> str:
    """3 significant digits, or the text form's own way when that is as short ('1210', not '1.21e+03')."""
    try:
        short = f"{float(v):.3g}"
    except ValueError:            # a complex value ('2+4j') or a word: as the text form says it
        return v
    return short if len(short) < len(v) else v


def tensor_box(t) -> Box:
    rows = [[Cell([Span(t.name, bold=True)])],
            [Cell([Span(f"{fmt_shape(t.shape)} {t.dtype}")], size=10)]]
    grad = short_values(t.grad)
    if t.role is Role.LEAF:
        rows.append([Cell([Span("grad: "), Span(grad)], size=10)])
    elif t.retains_grad:
        rows.append([Cell([Span("retains grad: "), Span(grad)], size=10)])
    else:
        rows.append([Cell([Span("grad: not kept (non-leaf)", italic=True)], colour=VALUE, size=10)])
    return Box(t.id, Table(rows, bg=LEAF if t.role is Role.LEAF else NAMED), "tensor")


def param_box(t) -> Box:
    """A parameter in a picture grouped by module: one line, name and shape; its .grad only said
    to be there or not (the text form has the values)."""
    grad = "no grad" if t.grad is None else "grad set"
    spans = [Span(t.name.rsplit(".", 1)[-1], size=10, bold=True), Span(f" {fmt_shape(t.shape)} · {grad}", size=10)]
    return Box(t.id, Table([[Cell(spans)]], bg=LEAF), "param")


def ref_box(rid: str, t) -> Box:
    spans = [Span(t.name, size=10, bold=True), Span(" · same leaf", size=10)]
    return Box(rid, Table([[Cell(spans)]], bg=LEAF, style="dashed"), "ref")


def base_scene(snap: Snapshot, params=frozenset()) -> Scene:
    """Every op and tensor of `snap` as a box (ops first), every edge; a named tensor's edge from
    the op that made it dashed."""
    scene = Scene()
    shared: dict[str, set] = {}
    for slots in snap.shared_buffers().values():
        for op, sv in slots:
            shared.setdefault(op.id, set()).add(sv.slot)
    for op in snap.ops.values():
        scene.add(op_box(op, shared.get(op.id, frozenset())))
    for t in snap.tensors.values():
        scene.add(param_box(t) if t.id in params else tensor_box(t))
    for a, b in snap.edges:
        scene.edges.append(Edge(a, b, style="dashed" if snap.role(b) in NAMED_TENSOR_ROLES else None))
    return scene
