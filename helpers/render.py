"""Turn a `Snapshot` into DOT (with the `graphviz` package) and DOT into SVG.

SVG layout uses the `dot` program when it is on PATH, and otherwise the
Graphviz engine bundled in the pygraphviz wheel, in-process. Both get the same
DOT source, so the picture means the same thing either way.
"""
from __future__ import annotations

import base64
import html
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

import graphviz

from . import layout
from .layout import engine  # noqa: F401  (render.engine(): which Graphviz lays out)
from .snapshot import NAMED_TENSOR_ROLES, Role, Saved, SavedState, Snapshot, fmt_bytes, fmt_shape

# Colours: one meaning each, explained in the legend.
LEAF = "#cfe8fc"
OP = "#eeeeee"
NAMED = "#d9f2d0"
FREED = "#c0392b"
HELD = "#1e6b30"
VALUE = "#666666"
HIGHLIGHT = "#ffb703"
MODIFIED = "#b35c00"
RAN = "#6a3d9a"
CHANGED = "#0b62a4"
CLUSTER = "#7a8a9a"

GRAD_VALUES_SHOWN = 4     # a box shows at most this many numbers of a .grad (the text form: all)
FAR_RANKS = 2             # a shared leaf's use more than this many ranks below its first use
                          # is drawn as a reference box, not as a long edge


_ESC = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#x27;",
                      "{": "&#123;", "}": "&#125;"})


def esc(text) -> str:
    """Escape user text for a Graphviz HTML label (quotes, braces, <script> stay text).

    Same result as html.escape(quote=True) plus braces, in one pass.
    """
    text = str(text)
    done = _ESC_CACHE.get(text)
    if done is None:
        done = text.translate(_ESC)
        if len(_ESC_CACHE) < 4096:  # slot and op names repeat: most calls are hits
            _ESC_CACHE[text] = done
    return done


_ESC_CACHE: dict[str, str] = {}


@dataclass(frozen=True)
class Marks:
    """What a picture marks on top of the snapshot: the node running now (orange fill), and
    the nodes a backward call ran, with their order (purple outline and 'ran #k')."""

    highlight: frozenset = frozenset()
    ran: Mapping[str, tuple[int, ...]] = field(default_factory=dict)   # id -> (k, ...): ran k-th
    changed: frozenset = frozenset()   # tensor ids whose .grad changed (thick blue frame, bold grad)
    # groups of nodes and a path (helpers.diagnose: the training step that made each op, the
    # path from the loss to where backward stopped), with their legend entries
    fills: Mapping[str, str] = field(default_factory=dict)   # id -> fill colour, replaces the usual
    path: frozenset = frozenset()                            # {(from id, to id)}: edges drawn thick
    legend: tuple = ()                                       # ((colour, words), ...) added to the legend


NO_MARKS = Marks()


def _ran_badge(order) -> str:
    """'ran #3' (or 'ran #2, #7' for a node two backward calls ran) after a node's name."""
    if not order:
        return ""
    order = (order,) if isinstance(order, int) else tuple(order)
    text = ", ".join(f"#{k}" for k in order[:3]) + (", ..." if len(order) > 3 else "")
    return f'&#160;<FONT COLOR="{RAN}" POINT-SIZE="10"><B>ran {text}</B></FONT>'


def _op_label(op, highlight=False, ran=None, shared=frozenset(), fill=None) -> str:
    """shared: the slots of this op whose buffer another slot holds too ('shared buffer');
    fill: a fill colour replacing the usual grey (helpers.diagnose)."""
    freed = sum(1 for s in op.saved if s.state is SavedState.FREED)
    border = RAN if ran is not None else (FREED if freed else "#555555")
    fill = HIGHLIGHT if highlight else (fill or OP)
    rows = [f'<TR><TD BGCOLOR="{fill}"><B>{esc(op.name)}</B>{_ran_badge(ran)}</TD></TR>']
    for s in op.saved:
        if s.state is SavedState.FREED:
            size = "" if s.shape is None else f" {fmt_shape(s.shape)} {fmt_bytes(s.nbytes)}"
            size = (f" {s.alias_note()}" if s.alias else "") + size
            rows.append(f'<TR><TD ALIGN="LEFT"><FONT COLOR="{FREED}" POINT-SIZE="10">'
                        f'<S>saved {esc(s.slot)}{esc(size)}</S>&#160;&#160;<B>FREED</B>'
                        f'{_SHARED if s.slot in shared else ""}</FONT></TD></TR>')
        elif s.is_tensor and s.modified:  # held, but changed in place since it was saved
            alias = f" {s.alias_note()}" if s.alias else ""
            size = "" if s.shape is None else f": {fmt_shape(s.shape)} {s.dtype} {fmt_bytes(s.nbytes)}"
            rows.append(f'<TR><TD ALIGN="LEFT"><FONT COLOR="{MODIFIED}" POINT-SIZE="10">'
                        f'saved {esc(s.slot)}{esc(alias)}{esc(size)}<BR ALIGN="LEFT"/>'
                        f'<B>MODIFIED IN PLACE since saved ({esc(s.modified)})</B></FONT></TD></TR>')
        elif s.state is SavedState.RECOMPUTED:  # a checkpoint re-runs the forward for it in backward
            rows.append(f'<TR><TD ALIGN="LEFT"><FONT COLOR="{VALUE}" POINT-SIZE="10">'
                        f'saved {esc(s.slot)}: <B>recomputed in backward</B> (checkpoint), not held</FONT></TD></TR>')
        elif s.state is SavedState.UNREADABLE:  # reading it raised something we do not know
            rows.append(f'<TR><TD ALIGN="LEFT"><FONT COLOR="{VALUE}" POINT-SIZE="10">'
                        f'saved {esc(s.slot)}: <B>unreadable</B> ({esc(s.value)})</FONT></TD></TR>')
        elif s.is_tensor:
            alias = f" {s.alias_note()}" if s.alias else ""
            rows.append(f'<TR><TD ALIGN="LEFT"><FONT COLOR="{HELD}" POINT-SIZE="10">'
                        f'saved {esc(s.slot)}{esc(alias)}: {fmt_shape(s.shape)} {s.dtype} '
                        f'{fmt_bytes(s.nbytes)}{_SHARED if s.slot in shared else ""}</FONT></TD></TR>')
    rows.extend(_value_rows([s for s in op.saved if not s.is_tensor and s.state is SavedState.VALUE]))
    width = "2" if ran is not None else "1"
    return (f'<<TABLE BORDER="{width}" CELLBORDER="0" CELLSPACING="0" CELLPADDING="3" COLOR="{border}">'
            + "".join(rows) + "</TABLE>>")


_SHARED = f'&#160;<FONT COLOR="{VALUE}"><I>shared buffer</I></FONT>'


def _value_rows(values: list[Saved]) -> list[str]:
    """The plain numbers an op saved, kept short in the picture (the text form lists them all).

    Up to three settings are shown (`exponent = 2`, `dim = 1`); size bookkeeping
    (`*_sym_sizes`, `*_sym_strides`, ...) and longer lists of settings are left to the
    text form, so a box is as wide as what it saved, not as its bookkeeping.
    """
    def row(text):
        return f'<TR><TD ALIGN="LEFT"><FONT COLOR="{VALUE}" POINT-SIZE="10"><I>{esc(text)}</I></FONT></TD></TR>'

    settings = [v for v in values if "sym_" not in v.slot]
    if len(settings) > 3:
        return []
    return [row(f"{v.slot} = {v.value}") for v in settings]


def short_values(text: str | None, shown: int = GRAD_VALUES_SHOWN) -> str:
    """'[1, 2, 3, 4, 5, 6] (2, 3)' -> '[1, 2, 3, 4, ...] (2, 3)': a picture shows at most
    `shown` numbers of a gradient (the text form keeps them all)."""
    if not text or not text.startswith("["):
        return str(text)
    close = text.find("]")
    values = text[1:close].split(", ")
    if close < 0 or len(values) <= shown:
        return text
    return "[" + ", ".join(values[:shown]) + ", ...]" + text[close + 1:]


def _param_label(t, highlight=False, ran=None) -> str:
    """A parameter in a picture grouped by module: one line, name and shape; its .grad is only
    said to be there or not (the text form has the values)."""
    fill = HIGHLIGHT if highlight else LEAF
    grad = "no grad" if t.grad is None else "grad set"
    return (f'<<TABLE BORDER="1" CELLBORDER="0" CELLSPACING="0" CELLPADDING="2" BGCOLOR="{fill}">'
            f'<TR><TD><FONT POINT-SIZE="10"><B>{esc(t.name.rsplit(".", 1)[-1])}</B> '
            f"{fmt_shape(t.shape)} · {grad}</FONT>{_ran_badge(ran)}</TD></TR></TABLE>>")


def _tensor_label(t, highlight=False, ran=None, changed=False, fill=None) -> str:
    fill = HIGHLIGHT if highlight else (fill or (LEAF if t.role is Role.LEAF else NAMED))
    rows = [f"<TR><TD><B>{esc(t.name)}</B>{_ran_badge(ran)}</TD></TR>",
            f'<TR><TD><FONT POINT-SIZE="10">{fmt_shape(t.shape)} {t.dtype}</FONT></TD></TR>']
    grad = esc(short_values(t.grad))
    if changed:
        grad = f'<FONT COLOR="{CHANGED}"><B>{grad}</B></FONT>'
    if t.role is Role.LEAF:
        rows.append(f'<TR><TD><FONT POINT-SIZE="10">grad: {grad}</FONT></TD></TR>')
    elif t.retains_grad:
        rows.append(f'<TR><TD><FONT POINT-SIZE="10">retains grad: {grad}</FONT></TD></TR>')
    else:
        rows.append(f'<TR><TD><FONT POINT-SIZE="10" COLOR="{VALUE}">'
                    '<I>grad: not kept (non-leaf)</I></FONT></TD></TR>')
    color = f' COLOR="{CHANGED}"' if changed else (f' COLOR="{RAN}"' if ran is not None else "")
    width = "3" if changed else ("2" if ran is not None else "1")
    return (f'<<TABLE BORDER="{width}" CELLBORDER="0" CELLSPACING="0" CELLPADDING="2" BGCOLOR="{fill}"{color}>'
            + "".join(rows) + "</TABLE>>")


def _ref_label(t) -> str:
    return (f'<<TABLE BORDER="1" CELLBORDER="0" CELLSPACING="0" CELLPADDING="2" BGCOLOR="{LEAF}" '
            f'STYLE="dashed"><TR><TD><FONT POINT-SIZE="10"><B>{esc(t.name)}</B> · same leaf</FONT>'
            "</TD></TR></TABLE>>")


def _summary_label(snap: Snapshot) -> str:
    more = snap.hidden_count
    kinds = ", ".join(f"{n} x {k}" for k, n in sorted(snap.hidden_by_type.items(),
                                                      key=lambda kv: (-kv[1], kv[0]))[:4])
    plus = "+" if snap.count_capped else ""
    return (f'<<TABLE BORDER="1" CELLBORDER="0" COLOR="{FREED}" STYLE="dashed">'
            f"<TR><TD><B>... {more:,}{plus} more nodes not drawn</B></TD></TR>"
            f'<TR><TD><FONT POINT-SIZE="10">{esc(kinds)}</FONT></TD></TR>'
            f'<TR><TD><FONT POINT-SIZE="10">a larger max_nodes=N draws more</FONT></TD></TR></TABLE>>')


def _above_label(above) -> str:
    """The box standing for what a focus= picture leaves out: '14 nodes from h to loss'."""
    return (f'<<TABLE BORDER="1" CELLBORDER="0" COLOR="{CLUSTER}" STYLE="dashed">'
            f"<TR><TD><B>{esc(above.headline())}</B></TD></TR>"
            f'<TR><TD><FONT POINT-SIZE="10">{esc(above.kinds(shown=3))}</FONT></TD></TR>'
            f'<TR><TD><FONT POINT-SIZE="10">not drawn here, only counted</FONT></TD></TR>'
            "</TABLE>>")


# --------------------------------------------------------------------------------
# Shared leaves: the cause of slow layouts. A weight used by every step of an unrolled RNN
# is one box with an edge to each use; Graphviz spent seconds to minutes routing those
# edges across every rank (RNN, 100 steps: 17 s; tanh(h @ w) x 400: 41 s). A use far below
# the first one is drawn as a small reference box next to it instead: no long edges.
def op_levels(snap: Snapshot) -> dict[str, int]:
    """Each op's level above the output: 0 for an op nothing uses, else 1 + the highest level
    of the ops using it (the rank Graphviz gives it, counted from the bottom; an op with no
    op input, like a weight's transpose, sits just above its user, not at the top)."""
    users: dict[str, list[str]] = {oid: [] for oid in snap.ops}
    pending = dict.fromkeys(snap.ops, 0)
    for op in snap.ops.values():
        for i in dict.fromkeys(op.inputs):
            if i in snap.ops:
                users[op.id].append(i)        # i feeds op: op is one of i's users
                pending[i] += 1
    level = {oid: 0 for oid, n in pending.items() if n == 0}
    ready = list(level)
    while ready:
        oid = ready.pop()
        for i in users[oid]:
            level[i] = max(level.get(i, 0), level[oid] + 1)
            pending[i] -= 1
            if pending[i] == 0:
                ready.append(i)
    return level


def far_leaf_uses(snap: Snapshot, far: int = FAR_RANKS) -> set[tuple[str, str]]:
    """(leaf id, op id) edges drawn as reference boxes: a leaf keeps a real edge to its
    first use (the highest op) and to every use within `far` levels of it."""
    uses: dict[str, list[str]] = {}
    for a, b in snap.edges:
        if a in snap.tensors and snap.tensors[a].role is Role.LEAF and b in snap.ops:
            uses.setdefault(a, []).append(b)
    far_edges = set()
    levels = None
    for leaf, ops in uses.items():
        if len(ops) < 2:
            continue
        levels = levels or op_levels(snap)
        first = max(levels.get(o, 0) for o in ops)
        far_edges.update((leaf, o) for o in ops if first - levels.get(o, 0) > far)
    return far_edges


# --------------------------------------------------------------------------------
# Framework plumbing: nn.Linear computes x @ W.T, so every Linear layer adds a TBackward0 box
# between its weight and its AddmmBackward0/MmBackward0. The picture folds it into the edge
# from the weight to that op, marked '.T' (the text form keeps the node).
TRANSPOSE = "TBackward0"


def folded_transposes(snap: Snapshot) -> dict[str, tuple[str, str]]:
    """{TBackward0 id: (leaf id, user op id)} for each transpose drawn as a marked edge: it saved
    nothing, its one input is a leaf, and its one output edge goes to an op (no named tensor, no
    focus= box of the part above)."""
    outs: dict[str, list[str]] = {}
    for a, b in snap.edges:
        outs.setdefault(a, []).append(b)
    for a in snap.above.into if snap.above is not None else ():
        outs.setdefault(a, []).append("above")
    folded = {}
    for op in snap.ops.values():
        if op.name != TRANSPOSE or op.saved or len(op.inputs) != 1 or op.id in snap.cut_at:
            continue
        (leaf,), users = op.inputs, outs.get(op.id, [])
        if snap.role(leaf) is Role.LEAF and len(users) == 1 and users[0] in snap.ops:
            folded[op.id] = (leaf, users[0])
    return folded


def _transpose_edge(tail: str, head: str, order, running: bool, path: bool) -> str:
    """The edge from a weight (or its reference box) to the op that used its transpose, marked
    '.T' beside its start (as the user's saved 'weight.T' says); purple, with its order, if it ran."""
    mark, colour = ".T", ""
    if order:
        mark += " " + ", ".join(f"#{k}" for k in order[:3])
        colour = f' color="{RAN}" fontcolor="{RAN}" penwidth=2'
    if running or path:
        colour = f' color="{HIGHLIGHT}" penwidth=3'
    return (f"\t{tail} -> {head} [taillabel=<<B>{esc(mark)}</B>> fontname=Helvetica fontsize=11 "
            f"labeldistance=1.5 minlen=2{colour}]\n")


# --------------------------------------------------------------------------------
@dataclass
class Grouping:
    """Clusters of a picture: `of` maps a node id to its cluster; `clusters` maps a cluster
    to (its parent cluster or None, its HTML label); `boxes` are extra nodes (id -> HTML label,
    placed in cluster of[id]) and `box_edges` their edges. Built by helpers.modules."""

    of: dict[str, str]
    clusters: dict[str, tuple[str | None, str]]
    boxes: dict[str, str] = field(default_factory=dict)
    box_edges: list[tuple[str, str]] = field(default_factory=list)
    params: frozenset = frozenset()   # leaf ids drawn as one-line parameter boxes (in their module's box)


def add_snapshot(g: graphviz.Digraph, snap: Snapshot, prefix: str = "", highlight=(),
                 marks: Marks = NO_MARKS, grouping: Grouping | None = None,
                 refs: bool = True, sizes: Mapping[str, tuple[int, int]] | None = None,
                 fold: bool = True) -> None:
    """Add the nodes and edges of `snap` to `g`, ids prefixed (for pictures of two snapshots).

    Node and edge lines are appended to `g.body` directly, in exactly the form
    `g.node(id, label, shape="plaintext", margin="0")` / `g.edge(a, b)` write them
    (tests/test_render.py checks the two agree): our ids are plain DOT
    identifiers and our labels are HTML labels, so graphviz's per-call quoting
    would change nothing and costs more than building the labels.
    refs: draw far uses of a shared leaf as reference boxes (see far_leaf_uses).
    sizes: {node id: (width, height) in points}, the box sizes of related pictures (box_sizes):
    each box is drawn that size, so a node keeps its size and place from picture to picture.
    fold: draw a Linear weight's TBackward0 as a marked edge (folded_transposes).
    """
    highlight = set(highlight) | set(marks.highlight)
    ran = marks.ran
    lines: dict[str, str] = {}
    shared: dict[str, set] = {}
    for slots in snap.shared_buffers().values():
        for op, sv in slots:
            shared.setdefault(op.id, set()).add(sv.slot)
    for op in snap.ops.values():
        label = _op_label(op, op.id in highlight, ran.get(op.id), shared.get(op.id, frozenset()),
                          marks.fills.get(op.id))
        lines[op.id] = f"\t{prefix}{op.id} [label={label} margin=0 shape=plaintext]\n"
    params = grouping.params if grouping is not None else ()
    for t in snap.tensors.values():
        label = (_param_label(t, t.id in highlight, ran.get(t.id)) if t.id in params else
                 _tensor_label(t, t.id in highlight, ran.get(t.id), t.id in marks.changed, marks.fills.get(t.id)))
        lines[t.id] = f"\t{prefix}{t.id} [label={label} margin=0 shape=plaintext]\n"
    far = far_leaf_uses(snap) if refs else set()
    folded = folded_transposes(snap) if fold else {}
    for t in folded:
        del lines[t]
    edges = []
    for a, b in snap.edges:
        if b in folded:       # weight -> its transpose: drawn with the transpose's own edge
            continue
        if a in folded:       # transpose -> user: from the weight (or its reference box)
            leaf, t = folded[a][0], a
            tail = f"{leaf}_to_{t}" if (leaf, t) in far else leaf
            if tail != leaf:
                lines[tail] = f"\t{prefix}{tail} [label={_ref_label(snap.tensors[leaf])} margin=0 shape=plaintext]\n"
                if grouping is not None and b in grouping.of:
                    grouping.of.setdefault(tail, grouping.of[b])
            edges.append(_transpose_edge(prefix + tail, prefix + b, ran.get(t), t in highlight,
                                         (leaf, t) in marks.path or (t, b) in marks.path))
            continue
        if (a, b) in far:
            rid = f"{a}_to_{b}"
            lines[rid] = f"\t{prefix}{rid} [label={_ref_label(snap.tensors[a])} margin=0 shape=plaintext]\n"
            if grouping is not None and b in grouping.of:
                grouping.of.setdefault(rid, grouping.of[b])
            edges.append(f"\t{prefix}{rid} -> {prefix}{b}\n")
            continue
        style = " [style=dashed]" if snap.role(b) in NAMED_TENSOR_ROLES else ""
        if (a, b) in marks.path:
            style = f' [color="{HIGHLIGHT}" penwidth=3]'
        edges.append(f"\t{prefix}{a} -> {prefix}{b}{style}\n")
    if sizes:
        for nid, size in sizes.items():
            if nid in lines:
                lines[nid] = sized(lines[nid], size)
    if grouping is None:
        g.body.extend(lines.values())
    else:
        for bid, label in grouping.boxes.items():
            lines[bid] = f"\t{prefix}{bid} [label={label} margin=0 shape=plaintext]\n"
        edges.extend(f"\t{prefix}{a} -> {prefix}{b}\n" for a, b in grouping.box_edges)
        _add_clusters(g.body, lines, grouping, prefix)

    g.body.extend(edges)
    if snap.truncated:
        g.node(prefix + "more", _summary_label(snap), shape="plaintext")
        # the hidden part is upstream (towards the leaves) of the nodes where the walk stopped
        for op_id in snap.cut_at:
            g.edge(prefix + "more", prefix + op_id, style="dotted")
    if snap.above is not None:   # drawn with focus=: the part between the roots and the focus
        g.node(prefix + "above", _above_label(snap.above), shape="plaintext")
        for nid in snap.above.into:
            thick = (nid, "above") in marks.path
            g.edge(prefix + nid, prefix + "above", **({"color": HIGHLIGHT, "penwidth": "3"} if thick
                                                       else {"style": "dotted"}))


def _add_clusters(body: list, lines: dict, grouping: Grouping, prefix: str) -> None:
    """Node lines nested in `subgraph cluster_...` blocks, one per module call."""
    members: dict[str | None, list[str]] = {}
    for nid, line in lines.items():
        key = grouping.of.get(nid)
        members.setdefault(key if key in grouping.clusters else None, []).append(line)
    children: dict[str | None, list[str]] = {}
    for key, (parent, _) in grouping.clusters.items():
        children.setdefault(parent, []).append(key)
    number = {key: i for i, key in enumerate(grouping.clusters)}

    def has_content(key):
        return key in members or any(has_content(c) for c in children.get(key, ()))

    body.extend(members.get(None, ()))
    stack = [(k, False) for k in reversed(children.get(None, []))]
    while stack:
        key, done = stack.pop()
        if done:
            body.append("\t}\n")
            continue
        if not has_content(key):
            continue
        label = grouping.clusters[key][1]
        body.append(f"\tsubgraph cluster_{prefix}m{number[key]} {{\n\t\tlabel={label} labeljust=l "
                    f'style="rounded" color="{CLUSTER}" fontsize=10\n')
        body.extend(members.get(key, ()))
        stack.append((key, True))
        stack.extend((c, False) for c in reversed(children.get(key, [])))


# --------------------------------------------------------------------------------
# Same size, same place: a before/after pair and a stepper's frames draw the same graph with
# labels of different sizes (a FREED mark, a longer grad, a 'ran #k' badge), and dot lays out
# each picture from its own sizes: the trunk moved between 'before' and 'after'. Each box is
# measured once in every picture of the set, and drawn at the largest size in all of them.
def box_sizes(pictures, titles=()) -> dict[str, tuple[int, int]]:
    """{node id: (width, height)} in whole points, the largest over `pictures`, a list of
    (Snapshot, Marks) drawn in one set (a pair, a stepper's frames); "title": the largest of
    `titles` (to_dot's title node). Measured by one layout of every box alone: no edges, one rank."""
    g = new_digraph()
    g.node_attr.update(width="0", height="0")     # a box's own size, not dot's 0.75 x 0.5 minimum
    for i, (snap, marks) in enumerate(pictures):
        part = new_digraph()
        add_snapshot(part, snap, prefix=f"p{i}_", marks=marks)
        g.body.extend(line for line in part.body if " -> " not in line)
    g.body.extend(_title_line(t, f"t{i}_title") for i, t in enumerate(titles) if t)
    sizes: dict[str, tuple[int, int]] = {}
    for line in laid_out(g.source, "plain").splitlines():
        if line.startswith("node "):
            _, name, _, _, w, h = line.split(" ", 6)[:6]
            key = name.split("_", 1)[1]
            w, h = math.ceil(float(w) * 72 - 0.01), math.ceil(float(h) * 72 - 0.01)
            old = sizes.get(key, (0, 0))
            sizes[key] = (max(old[0], w), max(old[1], h))
    return sizes


def sized(line: str, size: tuple[int, int]) -> str:
    """A node line from add_snapshot, its box drawn `size` (points) or larger: the table's WIDTH
    and HEIGHT, so edges still end at the box, and the width of a coloured first row (an op's
    name), which dot does not stretch to a wider table by itself."""
    w, h = size
    line = line.replace("label=<<TABLE ", f'label=<<TABLE WIDTH="{w}" HEIGHT="{h}" ', 1)
    border = _BORDER.search(line)
    if border is not None and "<TR><TD BGCOLOR=" in line:
        line = line.replace("<TR><TD BGCOLOR=", f'<TR><TD WIDTH="{w - 2 * int(border.group(1))}" BGCOLOR=', 1)
    return line


_BORDER = re.compile(r'<TABLE [^>]*?BORDER="(\d+)" CELLBORDER="0" CELLSPACING="0"')


def _title_line(title: str, node: str) -> str:
    return f"\t{node} [label=<<B>{esc(title)}</B>> shape=plaintext fontsize=12]\n"


# --------------------------------------------------------------------------------
# The legend: every mark a picture uses, explained in the picture itself.
def features(snaps, marks: Marks, grouping=None) -> list[str]:
    present = []
    saved = [s for snap in snaps for _, s in snap.saved_tensors()]
    roles = {t.role for snap in snaps for t in snap.tensors.values()}
    if Role.LEAF in roles:
        present.append("leaf")
    present.append("op")
    if roles & NAMED_TENSOR_ROLES:
        present.append("named")
    if any(s.state is SavedState.HELD and not s.modified for s in saved):
        present.append("held")
    if any(s.state is SavedState.FREED for s in saved):
        present.append("freed")
    if any(s.modified for s in saved):
        present.append("modified")
    if any(snap.shared_buffers() for snap in snaps):
        present.append("shared")
    if marks.highlight:
        present.append("running")
    if marks.ran:
        present.append("ran")
    if marks.changed:
        present.append("changed")
    if any(far_leaf_uses(snap) for snap in snaps):
        present.append("ref")
    if any(folded_transposes(snap) for snap in snaps):
        present.append("transpose")
    if grouping is not None and grouping.clusters:
        present.append("module")
    if any(snap.truncated for snap in snaps):
        present.append("more")
    if any(snap.above is not None for snap in snaps):
        present.append("above")
    return present


_LEGEND_ENTRIES = {
    "leaf": (f'BGCOLOR="{LEAF}"', "leaf tensor, with its .grad"),
    "op": (f'BGCOLOR="{OP}"', "op (grad_fn), with what it saved"),
    "named": (f'BGCOLOR="{NAMED}"', "tensor you named (dashed: made by)"),
    "held": (f'BGCOLOR="{HELD}"', "saved tensor held in memory"),
    "freed": (f'BGCOLOR="{FREED}"', "saved tensor FREED by backward"),
    "modified": (f'BGCOLOR="{MODIFIED}"', "saved, then modified in place"),
    "shared": (f'BGCOLOR="{VALUE}"', "shared buffer: one buffer, several slots (counted once)"),
    "running": (f'BGCOLOR="{HIGHLIGHT}"', "the node running in this step"),
    "ran": (f'BGCOLOR="{RAN}"', "ran #k: ran in this backward, k-th"),
    "changed": (f'BGCOLOR="{CHANGED}"', ".grad changed by this call"),
    "ref": (f'BGCOLOR="{LEAF}" STYLE="dashed" BORDER="1"', "same leaf, drawn again near a far use"),
    "transpose": ("", ".T on an edge: weight used transposed (TBackward0)"),
    "module": (f'COLOR="{CLUSTER}" STYLE="rounded" BORDER="1"', "module call: saved bytes held / freed"),
    "more": (f'COLOR="{FREED}" STYLE="dashed" BORDER="1"', "nodes beyond max_nodes, counted"),
    "above": (f'COLOR="{CLUSTER}" STYLE="dashed" BORDER="1"', "nodes from the focus to the roots, counted"),
}


def legend_label(features: list[str], columns: int = 2, extra=()) -> str:
    """An HTML-label legend: a swatch and a few words per mark, `columns` entries a row.
    extra: more ((colour, words), ...) entries, after the standard ones."""
    entries = [_LEGEND_ENTRIES[f] for f in features] + [(f'BGCOLOR="{c}"', words) for c, words in extra]
    cells = [f'<TD {swatch} WIDTH="12" HEIGHT="10"></TD>'
             f'<TD ALIGN="LEFT"><FONT POINT-SIZE="10">{esc(words)}</FONT></TD>'
             for swatch, words in entries]
    rows = ["<TR>" + "".join(cells[i:i + columns]) + "</TR>" for i in range(0, len(cells), columns)]
    return ('<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="3" CELLPADDING="1">'
            + "".join(rows) + "</TABLE>>")


def new_digraph(title: str | None = None) -> graphviz.Digraph:
    # nslimit/nslimit1 bound Graphviz's network-simplex passes to 2 x nodes iterations. Small
    # pictures come out identical; without the bound, a weight shared by many layers (an
    # unrolled RNN, tanh(y @ w) x 100) has so many crossing edges that the passes run for
    # minutes at 300 nodes and freeze the kernel (bash scripts/bench measures the layout).
    g = graphviz.Digraph(graph_attr={"rankdir": "TB", "fontname": "Helvetica", "fontsize": "11",
                                     "nodesep": "0.2", "ranksep": "0.3",
                                     "nslimit": "2", "nslimit1": "2", "ordering": "out"},
                         node_attr={"fontname": "Helvetica", "fontsize": "11"},
                         edge_attr={"arrowsize": "0.6", "color": "#555555"})
    if title:
        g.attr(label=esc(title), labelloc="t")
    return g


def to_dot(snap: Snapshot, title=None, highlight=(), marks: Marks = NO_MARKS,
           grouping: Grouping | None = None, legend: bool = True, refs: bool = True,
           sizes=None, entries=None, fold: bool = True) -> str:
    """DOT of one snapshot. refs=False draws every use of a shared leaf as an edge from its one
    box (slow to lay out for a weight used across many ranks: kept for the benchmark).
    sizes: box sizes shared with related pictures (box_sizes); entries: the legend's entries
    when they are shared too (a stepper's frames), else this picture's own. fold=False draws
    every TBackward0 as a box (for the benchmark)."""
    framed = bool(title and legend)
    g = new_digraph(None if framed else title)
    add_snapshot(g, snap, highlight=highlight, marks=marks, grouping=grouping, refs=refs, sizes=sizes,
                 fold=fold)
    if framed:   # the title labels an unframed cluster of everything (the graph's label holds the
        # legend), as wide in every picture of a set: no title node with invisible edges to every
        # source, which made big graphs slow to lay out
        g.body.insert(0, "\tsubgraph cluster_title {\n\t\tlabel=" + title_label(title, (sizes or {}).get("title"))
                      + " labelloc=t labeljust=l peripheries=0 margin=0\n")
        g.body.append("\t}\n")
    if legend:
        marks = replace(marks, highlight=frozenset(highlight) | marks.highlight)
        if entries is None:
            entries = features([snap], marks, grouping)
        g.attr(label=legend_label(entries, extra=marks.legend), labelloc="b", labeljust="l")
    return g.source


def title_label(title: str, size=None) -> str:
    """A picture's title as an HTML label, left-aligned in `size`'s width (points) when given,
    so the titles of a set of pictures take the same room."""
    width = f' WIDTH="{size[0]}"' if size else ""
    return (f'<<TABLE BORDER="0" CELLSPACING="0" CELLPADDING="0"{width}><TR><TD ALIGN="LEFT">'
            f'<FONT POINT-SIZE="12"><B>{esc(title)}</B></FONT></TD></TR></TABLE>>')


def pair_dot(left: Snapshot, right: Snapshot, titles=("before", "after"), marks: Marks = NO_MARKS,
             sizes=None) -> str:
    """Both snapshots in one layout, side by side, as two clusters (stacked_dots stacks them).
    `marks` apply to the second (the nodes a backward call ran). sizes: box sizes shared by
    both (pair_sizes)."""
    g = new_digraph()
    g.attr(label=legend_label(features([left, right], marks)), labelloc="b", labeljust="l")
    for key, snap, title, m in (("L", left, titles[0], NO_MARKS), ("R", right, titles[1], marks)):
        with g.subgraph(name=f"cluster_{key}") as sub:
            sub.attr(label=f"<<B>{esc(title)}</B>>", labelloc="t", fontsize="13", style="rounded",
                     color="#999999")
            add_snapshot(sub, snap, prefix=key + "_", marks=m, sizes=sizes)
    return g.source


def stacked_dots(left: Snapshot, right: Snapshot, titles=("before", "after"),
                 marks: Marks = NO_MARKS, sizes=None) -> tuple[str, str, str]:
    """The pair as three pictures laid out apart, to be stacked (stack_svgs): before, after and
    the legend of both. One layout of both puts the second beside the first's widest rank, not
    under it; the legend apart keeps a legend wider than the graph from re-centring 'after'.
    sizes: box sizes shared by both (pair_sizes)."""
    dots = []
    for snap, title, m in ((left, titles[0], NO_MARKS), (right, titles[1], marks)):
        g = new_digraph()
        add_snapshot(g, snap, marks=m, sizes=sizes)
        # the title as the graph's label, both as wide: a title node above every source would
        # take invisible edges to each (10x the layout time of a transformer's picture)
        g.attr(label=title_label(title, (sizes or {}).get("title")), labelloc="t", labeljust="l")
        dots.append(g.source)
    legend = new_digraph()
    legend.node("legend", legend_label(features([left, right], marks)), shape="plaintext", margin="0")
    return (*dots, legend.source)


def pair_sizes(left: Snapshot, right: Snapshot, titles=("before", "after"),
               marks: Marks = NO_MARKS) -> dict[str, tuple[int, int]]:
    """box_sizes of a pair (marks on the second), for the nodes both halves draw alike: the
    same id and the same op or tensor name (compare() may pair two different graphs)."""
    same = {nid for nid in (*left.ops, *left.tensors) if _kind(left, nid) == _kind(right, nid)}
    sizes = box_sizes([(left, NO_MARKS), (right, marks)], titles)
    return {k: v for k, v in sizes.items() if k == "title" or k in same or k.split("_to_")[0] in same}


def _kind(snap: Snapshot, nid: str):
    op = snap.ops.get(nid)
    if op is not None:
        return "op", op.name
    t = snap.tensors.get(nid)
    return None if t is None else ("tensor", t.name)


_SVG_HEAD = re.compile(r'<svg width="([\d.]+)pt" height="([\d.]+)pt"\s+viewBox="([^"]*)"')


def stack_svgs(svgs: list[str], gap_pt: float = 12.0) -> str:
    """Graphviz SVGs one above the other, left-aligned, in one SVG (each keeps its own
    coordinates inside a nested <svg>)."""
    parts, y, width = [], 0.0, 0.0
    for svg in svgs:
        m = _SVG_HEAD.search(svg)
        w, h = float(m.group(1)), float(m.group(2))
        body = svg[m.start():]
        body = body.replace(m.group(0), f'<svg x="0" y="{y:.2f}" width="{w:.2f}" height="{h:.2f}" '
                                         f'viewBox="{m.group(3)}"', 1)
        body = re.sub(r"<!--.*?-->", "", body, flags=re.S)
        parts.append(body.strip())
        y += h + gap_pt
        width = max(width, w)
    height = y - gap_pt
    return ('<?xml version="1.0" encoding="UTF-8" standalone="no"?>\n'
            f'<svg width="{width:.0f}pt" height="{height:.0f}pt" viewBox="0.00 0.00 {width:.2f} {height:.2f}" '
            'xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink">\n'
            + "\n".join(parts) + "\n</svg>\n")


# --------------------------------------------------------------------------------
def svg_img(svg: str, alt: str, style: str = "") -> str:
    """An SVG as an <img> with a data: URI. JupyterLab renders raw SVG only in trusted notebooks
    and its sanitizer drops inline <svg>, but keeps images; nbconvert passes them through too.
    (nbval blanks the data: tests/nbval_sanitize.cfg.)"""
    data = base64.b64encode(svg.encode("utf-8")).decode("ascii")
    style = f' style="{style}"' if style else ""
    return f'<img alt="{html.escape(alt, quote=True)}" src="data:image/svg+xml;base64,{data}"{style}>'


def svg_from_dot(source: str) -> str:
    return laid_out(source, "svg")


def laid_out(source: str, fmt: str = "svg") -> str:
    """`source` laid out by dot, written in `fmt` ('svg', 'plain', 'json'), by render.engine(),
    under a time limit (helpers.layout: the one place a picture is laid out)."""
    return layout.laid_out(source, fmt)
