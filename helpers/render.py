"""Turn a `Snapshot` into DOT (with the `graphviz` package) and DOT into SVG.

SVG layout uses the `dot` program when it is on PATH, and otherwise the
Graphviz engine bundled in the pygraphviz wheel, in-process. Both get the same
DOT source, so the picture means the same thing either way.
"""
from __future__ import annotations

import base64
import contextlib
import html
import os
import shutil
import subprocess

import graphviz

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

LEGEND = ("blue: leaf tensor (its .grad)   grey: op, with the tensors it saved for backward   "
          "green: named tensor   red, struck through: saved tensor freed by backward")

DOT_TIMEOUT_S = 60


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


def _op_label(op, highlight=False, fill=None) -> str:
    freed = sum(1 for s in op.saved if s.state is SavedState.FREED)
    border = FREED if freed else "#555555"
    fill = HIGHLIGHT if highlight else (fill or OP)
    rows = [f'<TR><TD BGCOLOR="{fill}"><B>{esc(op.name)}</B></TD></TR>']
    for s in op.saved:
        if s.state is SavedState.FREED:
            size = "" if s.shape is None else f" {fmt_shape(s.shape)} {fmt_bytes(s.nbytes)}"
            size = (f" {s.alias_note()}" if s.alias else "") + size
            rows.append(f'<TR><TD ALIGN="LEFT"><FONT COLOR="{FREED}" POINT-SIZE="10">'
                        f'<S>saved {esc(s.slot)}{esc(size)}</S>&#160;&#160;<B>FREED</B></FONT></TD></TR>')
        elif s.is_tensor and s.modified:  # held, but changed in place since it was saved
            alias = f" {s.alias_note()}" if s.alias else ""
            size = "" if s.shape is None else f": {fmt_shape(s.shape)} {s.dtype} {fmt_bytes(s.nbytes)}"
            rows.append(f'<TR><TD ALIGN="LEFT"><FONT COLOR="{MODIFIED}" POINT-SIZE="10">'
                        f'saved {esc(s.slot)}{esc(alias)}{esc(size)}<BR ALIGN="LEFT"/>'
                        f'<B>MODIFIED IN PLACE since saved ({esc(s.modified)})</B></FONT></TD></TR>')
        elif s.state is SavedState.UNREADABLE:  # reading it raised something we do not know
            rows.append(f'<TR><TD ALIGN="LEFT"><FONT COLOR="{VALUE}" POINT-SIZE="10">'
                        f'saved {esc(s.slot)}: <B>unreadable</B> ({esc(s.value)})</FONT></TD></TR>')
        elif s.is_tensor:
            alias = f" {s.alias_note()}" if s.alias else ""
            rows.append(f'<TR><TD ALIGN="LEFT"><FONT COLOR="{HELD}" POINT-SIZE="10">'
                        f'saved {esc(s.slot)}{esc(alias)}: {fmt_shape(s.shape)} {s.dtype} '
                        f'{fmt_bytes(s.nbytes)}</FONT></TD></TR>')  # shape, dtype, size: safe text
    rows.extend(_value_rows([s for s in op.saved if not s.is_tensor and s.state is SavedState.VALUE],
                            any(s.is_tensor for s in op.saved)))
    return (f'<<TABLE BORDER="1" CELLBORDER="0" CELLSPACING="0" CELLPADDING="3" COLOR="{border}">'
            + "".join(rows) + "</TABLE>>")


def _value_rows(values: list[Saved], saved_tensors: bool) -> list[str]:
    """The plain numbers an op saved, kept short in the picture (the text form lists them all).

    Size bookkeeping (`*_sym_sizes`, `*_sym_strides`, ...) is collapsed to a count when the
    op saved anything else; more than three other settings are listed by name only.
    """
    def row(text):
        return f'<TR><TD ALIGN="LEFT"><FONT COLOR="{VALUE}" POINT-SIZE="9"><I>{esc(text)}</I></FONT></TD></TR>'

    sizes = [v for v in values if "sym_" in v.slot]
    settings = [v for v in values if "sym_" not in v.slot]
    out = []
    if len(settings) > 3:
        out.append(row("settings: " + ", ".join(v.slot for v in settings)))
    else:
        out.extend(row(f"{v.slot} = {v.value}") for v in settings)
    if sizes and (settings or saved_tensors):
        out.append(row(f"+ {len(sizes)} size value{'s' if len(sizes) > 1 else ''}"))
    else:
        out.extend(row(f"{v.slot} = {v.value}") for v in sizes)
    return out


def _tensor_label(t, highlight=False, fill=None) -> str:
    fill = HIGHLIGHT if highlight else (fill or (LEAF if t.role is Role.LEAF else NAMED))
    rows = [f"<TR><TD><B>{esc(t.name)}</B></TD></TR>",
            f'<TR><TD><FONT POINT-SIZE="10">{fmt_shape(t.shape)} {t.dtype}</FONT></TD></TR>']
    if t.role is Role.LEAF:
        rows.append(f'<TR><TD><FONT POINT-SIZE="10">grad: {esc(t.grad)}</FONT></TD></TR>')
    elif t.retains_grad:
        rows.append(f'<TR><TD><FONT POINT-SIZE="10">retains grad: {esc(t.grad)}</FONT></TD></TR>')
    else:
        rows.append(f'<TR><TD><FONT POINT-SIZE="9" COLOR="{VALUE}">'
                    '<I>grad: not kept (non-leaf)</I></FONT></TD></TR>')
    return (f'<<TABLE BORDER="1" CELLBORDER="0" CELLSPACING="0" CELLPADDING="2" BGCOLOR="{fill}">'
            + "".join(rows) + "</TABLE>>")


def _summary_label(snap: Snapshot) -> str:
    more = snap.hidden_count
    kinds = ", ".join(f"{n} x {k}" for k, n in sorted(snap.hidden_by_type.items(),
                                                      key=lambda kv: (-kv[1], kv[0]))[:4])
    plus = "+" if snap.count_capped else ""
    return (f'<<TABLE BORDER="1" CELLBORDER="0" COLOR="{FREED}" STYLE="dashed">'
            f"<TR><TD><B>... {more:,}{plus} more nodes not drawn</B></TD></TR>"
            f'<TR><TD><FONT POINT-SIZE="10">{esc(kinds)}</FONT></TD></TR>'
            f'<TR><TD><FONT POINT-SIZE="10">draw(..., max_nodes=N) draws more</FONT></TD></TR></TABLE>>')


def add_snapshot(g: graphviz.Digraph, snap: Snapshot, prefix: str = "", highlight=(),
                 fills=None, marked_edges=()) -> None:
    """Add the nodes and edges of `snap` to `g`, ids prefixed (for side-by-side pictures).

    fills: {node id: colour} replaces a node's usual fill (groups of nodes, e.g. by the
    training step that made them); `highlight` still wins. marked_edges: {(from id, to id)}
    edges drawn thick in the highlight colour (a path).

    Node and edge lines are appended to `g.body` directly, in exactly the form
    `g.node(id, label, shape="plaintext", margin="0")` / `g.edge(a, b)` write them
    (tests/test_render.py checks the two agree): our ids are plain DOT
    identifiers and our labels are HTML labels, so graphviz's per-call quoting
    would change nothing and costs more than building the labels.
    """
    body = g.body
    fills = fills or {}
    for op in snap.ops.values():
        body.append(f"\t{prefix}{op.id} [label={_op_label(op, op.id in highlight, fills.get(op.id))} "
                    "margin=0 shape=plaintext]\n")
    for t in snap.tensors.values():
        body.append(f"\t{prefix}{t.id} [label={_tensor_label(t, t.id in highlight, fills.get(t.id))} "
                    "margin=0 shape=plaintext]\n")
    for a, b in snap.edges:
        style = " [style=dashed]" if snap.role(b) in NAMED_TENSOR_ROLES else ""
        if (a, b) in marked_edges:
            style = f' [color="{HIGHLIGHT}" penwidth=3]'
        body.append(f"\t{prefix}{a} -> {prefix}{b}{style}\n")
    if snap.truncated:
        g.node(prefix + "more", _summary_label(snap), shape="plaintext")
        # the hidden part is upstream (towards the leaves) of the nodes where the walk stopped
        for op_id in snap.cut_at:
            g.edge(prefix + "more", prefix + op_id, style="dotted")


def new_digraph(title: str | None = None) -> graphviz.Digraph:
    # nslimit/nslimit1 bound Graphviz's network-simplex passes to 2 x nodes iterations. Small
    # pictures come out identical; without the bound, a weight shared by many layers (an
    # unrolled RNN, tanh(y @ w) x 100) has so many crossing edges that the passes run for
    # minutes at 300 nodes and freeze the kernel (bash scripts/bench measures the layout).
    g = graphviz.Digraph(graph_attr={"rankdir": "TB", "fontname": "Helvetica", "fontsize": "11",
                                     "nodesep": "0.25", "ranksep": "0.3",
                                     "nslimit": "2", "nslimit1": "2"},
                         node_attr={"fontname": "Helvetica", "fontsize": "11"},
                         edge_attr={"arrowsize": "0.6", "color": "#555555"})
    if title:
        g.attr(label=esc(title), labelloc="t")
    return g


def to_dot(snap: Snapshot, title=None, highlight=(), fills=None, marked_edges=()) -> str:
    g = new_digraph(title)
    add_snapshot(g, snap, highlight=highlight, fills=fills, marked_edges=marked_edges)
    return g.source


def pair_dot(left: Snapshot, right: Snapshot, titles=("before", "after")) -> str:
    """Both snapshots in one layout, side by side, as two clusters."""
    g = new_digraph(LEGEND)
    g.attr(labelloc="b", fontsize="10")
    for key, snap, title in (("L", left, titles[0]), ("R", right, titles[1])):
        with g.subgraph(name=f"cluster_{key}") as sub:
            sub.attr(label=esc(title), labelloc="t", fontsize="13", style="rounded", color="#999999")
            add_snapshot(sub, snap, prefix=key + "_")
    return g.source


# --------------------------------------------------------------------------------
@contextlib.contextmanager
def quiet_fd2():
    """Silence C-level writes to fd 2 (the bundled fontconfig warns there)."""
    try:
        saved = os.dup(2)
    except OSError:
        yield
        return
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def engine() -> str:
    """'dot' if a Graphviz `dot` is on PATH, else 'pygraphviz' (bundled engine).

    BACKWARD_TWICE_ENGINE=dot|pygraphviz forces one (used by the tests).
    """
    forced = os.environ.get("BACKWARD_TWICE_ENGINE")
    if forced:
        return forced
    return "dot" if shutil.which("dot") else "pygraphviz"


def svg_img(svg: str, alt: str, style: str = "") -> str:
    """An SVG as an <img> with a data: URI. JupyterLab renders raw SVG only in trusted notebooks
    and its sanitizer drops inline <svg>, but keeps images; nbconvert passes them through too.
    (nbval blanks the data: tests/nbval_sanitize.cfg.)"""
    data = base64.b64encode(svg.encode("utf-8")).decode("ascii")
    style = f' style="{style}"' if style else ""
    return f'<img alt="{html.escape(alt, quote=True)}" src="data:image/svg+xml;base64,{data}"{style}>'


def svg_from_dot(source: str) -> str:
    if engine() == "dot":
        dot = shutil.which("dot")
        if dot is None:
            raise RuntimeError("BACKWARD_TWICE_ENGINE=dot but no `dot` program is on PATH")
        done = subprocess.run([dot, "-Tsvg"], input=source.encode(), capture_output=True,
                              timeout=DOT_TIMEOUT_S)
        if done.returncode != 0:
            raise RuntimeError("dot failed: " + done.stderr.decode(errors="replace")[-500:])
        return done.stdout.decode()
    with quiet_fd2():
        import pygraphviz

        svg = pygraphviz.AGraph(string=source).draw(format="svg", prog="dot")
    return svg.decode() if isinstance(svg, bytes) else svg
