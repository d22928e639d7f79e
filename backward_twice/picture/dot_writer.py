"""The one place DOT is written: a Scene (backward_twice.picture.scene) in, DOT source out.

Nothing else in helpers writes or edits DOT text. Box labels are Graphviz HTML-like tables;
every piece of user text goes through `esc`.
"""
from __future__ import annotations

import re

from .palette import CLUSTER, EDGE, PAIR
from .scene import Box, Cell, Edge, Scene, Span, Table

GRAPH_ATTRS = {"fontname": "Helvetica", "fontsize": "11", "nodesep": "0.2",
               # nslimit/nslimit1 bound Graphviz's network-simplex passes to 2 x nodes iterations.
               # Small pictures come out identical; without the bound, a weight shared by many
               # layers has so many crossing edges that the passes run for minutes at 300 nodes.
               "nslimit": "2", "nslimit1": "2", "ordering": "out", "rankdir": "TB", "ranksep": "0.15"}
NODE_ATTRS = {"fontname": "Helvetica", "fontsize": "11"}
EDGE_ATTRS = {"arrowsize": "0.6", "color": EDGE}

_ESC = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#x27;",
                      "{": "&#123;", "}": "&#125;", "\u00a0": "&#160;", "\u00d7": "&#215;",
                      "\u2026": "&#8230;"})
_ESC_CACHE: dict[str, str] = {}


def esc(text) -> str:
    """User text for a Graphviz HTML label (quotes, braces, <script> stay text), in one pass."""
    text = str(text)
    done = _ESC_CACHE.get(text)
    if done is None:
        done = text.translate(_ESC)
        if len(_ESC_CACHE) < 4096:      # slot and op names repeat: most calls are hits
            _ESC_CACHE[text] = done
    return done


_ID = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*|-?(\.\d+|\d+(\.\d*)?))$")


def _attrs(attrs: dict) -> str:
    parts = []
    for k, v in attrs.items():
        if v is None:
            continue
        v = str(v)
        parts.append(f"{k}={v if (_ID.match(v) or v.startswith('<')) else chr(34) + v + chr(34)}")
    return " ".join(parts)


# -- labels ----------------------------------------------------------------------
def _span(s: Span) -> str:
    if s.br:
        return f'<BR ALIGN="{s.br_align}"/>' if s.br_align else "<BR/>"
    text = esc(s.text)
    for on, tag in ((s.strike, "S"), (s.italic, "I"), (s.bold, "B")):
        if on:
            text = f"<{tag}>{text}</{tag}>"
    return text


def spans_html(spans: list[Span]) -> str:
    """Spans in order; a run of spans with the same colour and size shares one FONT."""
    out, i = [], 0
    while i < len(spans):
        key = (spans[i].colour, spans[i].size)
        j = i
        while j < len(spans) and (spans[j].colour, spans[j].size) == key:
            j += 1
        body = "".join(_span(s) for s in spans[i:j])
        out.append(_font(body, *key))
        i = j
    return "".join(out)


def _font(body: str, colour, size) -> str:
    if colour is None and size is None:
        return body
    a = (f' COLOR="{colour}"' if colour else "") + (f' POINT-SIZE="{size}"' if size else "")
    return f"<FONT{a}>{body}</FONT>"


def _cell(c: Cell, first_row_width=None) -> str:
    a = ""
    for key, v in (("WIDTH", first_row_width if c.bg and first_row_width else c.width), ("HEIGHT", c.height),
                   ("COLSPAN", c.colspan), ("ROWSPAN", c.rowspan), ("ALIGN", c.align), ("VALIGN", c.valign),
                   ("BGCOLOR", c.bg), ("COLOR", c.frame_colour), ("STYLE", c.style), ("BORDER", c.border)):
        if v is not None:
            a += f' {key}="{v}"'
    return f"<TD{a}>{_font(spans_html(c.spans), c.colour, c.size)}</TD>"


def table_html(t: Table) -> str:
    a = ""
    for key, v in (("WIDTH", t.width), ("HEIGHT", t.height), ("BORDER", t.border), ("CELLBORDER", t.cellborder),
                   ("CELLSPACING", t.cellspacing), ("CELLPADDING", t.cellpadding), ("COLOR", t.colour),
                   ("BGCOLOR", t.bg), ("STYLE", t.style)):
        if v is not None:
            a += f' {key}="{v}"'
    rows = []
    for k, row in enumerate(t.rows):
        width = t.first_row_width if k == 0 else None
        rows.append("<TR>" + "".join(_cell(c, width) for c in row) + "</TR>")
    return f"<<TABLE{a}>" + "".join(rows) + "</TABLE>>"


def label(box: Box) -> str:
    if box.table is None:
        return f"<<B>{esc(box.plain_label or '')}</B>>"
    return table_html(box.table)


# -- the graph --------------------------------------------------------------------
def _node(box: Box, prefix: str) -> str:
    attrs = {"label": label(box)}
    if not box.simple:
        attrs["margin"] = "0"
    attrs["shape"] = "plaintext"
    attrs.update(box.attrs)
    return f"\t{prefix}{box.id} [{_attrs(attrs)}]\n"


def _edge(e: Edge, prefix: str) -> str:
    attrs: dict = {}
    if e.tail_mark is not None:
        attrs.update(xlabel=f"<<B>{esc(e.tail_mark)}</B>>", fontname="Helvetica", fontsize="11",
                     minlen=e.minlen)
    elif e.minlen is not None:
        attrs["minlen"] = e.minlen
    attrs.update(color=e.colour, fontcolor=e.mark_colour, penwidth=None if e.width is None else f"{e.width:g}",
                 style=e.style)
    if e.width is not None and e.width > 1:   # Graphviz grows an arrowhead with its pen: keep the usual size
        attrs["arrowsize"] = f"{float(EDGE_ATTRS['arrowsize']) * 1.5 / e.width:.2g}"
    a = _attrs(attrs)
    return f"\t{prefix}{e.tail} -> {prefix}{e.head}" + (f" [{a}]" if a else "") + "\n"


def legend_html(entries, columns: int = 2) -> str:
    """An HTML-label legend: a swatch and a few words per entry, `columns` entries a row.
    entries: ((swatch cell attributes as a Cell, words), ...)."""
    cells = [f'{_cell(swatch)}<TD ALIGN="LEFT"><FONT POINT-SIZE="10">{esc(words)}</FONT></TD>'
             for swatch, words in entries]
    rows = ["<TR>" + "".join(cells[i:i + columns]) + "</TR>" for i in range(0, len(cells), columns)]
    return ('<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="2" CELLPADDING="1">'
            + "".join(rows) + "</TABLE>>")


def title_html(title: str, width=None) -> str:
    """A picture's title, left-aligned in `width` points when given (a set of pictures' titles
    then take the same room)."""
    w = f' WIDTH="{width}"' if width else ""
    return (f'<<TABLE BORDER="0" CELLSPACING="0" CELLPADDING="0"{w}><TR><TD ALIGN="LEFT">'
            f'<FONT POINT-SIZE="12"><B>{esc(title)}</B></FONT></TD></TR></TABLE>>')


def body(scene: Scene, prefix: str = "", legend_entries=None) -> list[str]:
    """The node, cluster and edge lines of a scene (ids prefixed: one half of a pair)."""
    lines: list[str] = []
    children: dict = {}
    for cid, c in scene.clusters.items():
        children.setdefault(c.parent if c.parent in scene.clusters else None, []).append(cid)
    members: dict = {}
    for box in scene.boxes.values():
        members.setdefault(box.cluster if box.cluster in scene.clusters else None, []).append(box)

    def has_content(cid):
        return cid in members or any(has_content(k) for k in children.get(cid, ()))

    def emit(cid, depth):
        for box in members.get(cid, ()):
            lines.append(_node(box, prefix))
        for k in children.get(cid, ()):
            if not has_content(k):
                continue
            c = scene.clusters[k]
            lines.append(f"\tsubgraph cluster_{prefix}{k} {{\n\t\t"
                         + _attrs({"label": "<" + spans_html(c.label) + ">", "labeljust": "l",
                                   "style": "rounded", "color": CLUSTER, "fontsize": "10"}) + "\n")
            emit(k, depth + 1)
            lines.append("\t}\n")

    emit(None, 0)
    lines.extend(_edge(e, prefix) for e in scene.edges)
    return lines


def header(graph_attrs=None, node_attrs=None) -> str:
    g = {**GRAPH_ATTRS, **(graph_attrs or {})}
    n = {**NODE_ATTRS, **(node_attrs or {})}
    return (f"digraph {{\n\tgraph [{_attrs(g)}]\n\tnode [{_attrs(n)}]\n\tedge [{_attrs(EDGE_ATTRS)}]\n")


def graph_label(text_or_html: str, loc: str, just: str | None = None) -> str:
    return "\t" + _attrs({"label": text_or_html, "labeljust": just, "labelloc": loc}) + "\n"


def write(scene: Scene) -> str:
    """DOT of one scene: its title (framed above everything, or as the graph's label), its boxes,
    clusters and edges, its legend below."""
    out = [header()]
    if scene.title and not scene.framed_title and not scene.title_on_top:
        out.append(graph_label(esc(scene.title), "t"))
    if scene.title and scene.title_on_top:
        out.append(graph_label(title_html(scene.title, scene.title_width), "t", "l"))
    if scene.framed_title:
        out.append("\tsubgraph cluster_title {\n\t\t" + _attrs({
            "label": title_html(scene.title, scene.title_width), "labelloc": "t", "labeljust": "l",
            "peripheries": "0", "margin": "0"}) + "\n")
    out.extend(body(scene))
    if scene.framed_title:
        out.append("\t}\n")
    if scene.legend:
        out.append(graph_label(legend_html(scene.legend, scene.legend_columns), "b", "l"))
    return "".join(out) + "}\n"


def write_pair(halves, legend, columns: int = 2) -> str:
    """Two scenes side by side in one layout, each in a cluster headed by its title."""
    out = [header(), graph_label(legend_html(legend, columns), "b", "l")]
    for key, scene in halves:
        out.append(f"\tsubgraph cluster_{key} {{\n\t\t" + _attrs({
            "color": PAIR, "fontsize": "13", "label": f"<<B>{esc(scene.title)}</B>>",
            "labelloc": "t", "style": "rounded"}) + "\n")
        out.extend("\t" + line for line in body(scene, prefix=key + "_"))
        out.append("\t}\n")
    return "".join(out) + "}\n"


def write_legend(legend, columns: int = 2) -> str:
    """A legend alone, as one box (stacked pictures share it below them; measuring its width)."""
    label = legend_html(legend, columns)
    return header() + f"\tlegend [{_attrs({'label': label, 'margin': '0', 'shape': 'plaintext'})}]\n}}\n"


def write_boxes(scenes, titles=()) -> str:
    """Every box of `scenes` alone (no edges, one rank), ids prefixed p0_, p1_ ..., titles as
    t0_title ...: the DOT that box sizes are measured from."""
    out = [header(node_attrs={"height": "0", "width": "0"})]
    for i, scene in enumerate(scenes):
        out.extend(_node(b, f"p{i}_") for b in scene.boxes.values())
    for i, t in enumerate(titles):
        if t:
            out.append(f"\tt{i}_title [label=<<B>{esc(t)}</B>> shape=plaintext fontsize=12]\n")
    return "".join(out) + "}\n"
