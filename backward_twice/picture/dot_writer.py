"""The one place DOT is written: a Scene (backward_twice.picture.scene) in, DOT source out.

Nothing else in backward_twice writes or edits DOT text. The graph is built with the `graphviz`
package's `Digraph` (as torchviz and torchview do), which quotes identifiers and sorts attributes,
so the text is deterministic. Box labels are Graphviz HTML-like tables, and every piece of user
text in them goes through `esc`; a label that is plain text (a title) goes through `plain`,
since the graphviz package reads any string of the form '<...>' as HTML and passes backslashes
on (Graphviz reads '\\n', '\\N' and '\\l' in a quoted string as escapes).
"""
from __future__ import annotations

import graphviz
from graphviz import quoting

from .palette import CLUSTER, EDGE, PAIR
from .scene import Box, Cell, Edge, Scene, Span, Table

GRAPH_ATTRS = {"fontname": "Helvetica", "fontsize": "11", "nodesep": "0.2",
               # nslimit/nslimit1 bound Graphviz's network-simplex passes to 2 x nodes iterations.
               # Small pictures come out identical; without the bound, a weight shared by many
               # layers has so many crossing edges that the passes run for minutes at 300 nodes.
               "nslimit": "2", "nslimit1": "2", "ordering": "out", "rankdir": "TB", "ranksep": "0.15"}
# Every box is an HTML table with no margin of its own: set once for the graph, not on every node.
NODE_ATTRS = {"fontname": "Helvetica", "fontsize": "11", "margin": "0", "shape": "plaintext"}
GRAPHVIZ_MARGIN = "0.11,0.055"     # Graphviz's own default node margin: the count boxes keep it
EDGE_ATTRS = {"arrowsize": "0.6", "color": EDGE}

_ESC = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#x27;",
                      "{": "&#123;", "}": "&#125;", "\u00a0": "&#160;", "\u00d7": "&#215;",
                      "\u2026": "&#8230;",
                      # Graphviz reads \N, \G, \L ... in any label, HTML ones too (after character
                      # references): a backslash doubled shows as one
                      "\\": "\\\\"})
_ESC_CACHE: dict[str, str] = {}


def esc(text) -> str:
    """User text for a Graphviz label (quotes, braces, <script>, backslashes stay text), in one pass."""
    text = str(text)
    done = _ESC_CACHE.get(text)
    if done is None:
        done = text.translate(_ESC)
        if len(_ESC_CACHE) < 4096:      # slot and op names repeat: most calls are hits
            _ESC_CACHE[text] = done
    return done


def plain(text) -> graphviz.nohtml:
    """User text as a plain (quoted, not HTML) label: `esc`'s character references (Graphviz reads
    them in any label) and doubled backslashes (else '\\n' is a line break), marked nohtml so that
    '<lambda>' is never taken for HTML."""
    return graphviz.nohtml(esc(text))


_QUOTED: dict[str, str] = {}
_quote = getattr(quoting.quote, "__wrapped__", quoting.quote)     # without its positional-args check


def quote(text: str) -> str:
    """graphviz's own quoting of an identifier or attribute value (quoted unless a plain DOT ID), for
    plain str only (never a nohtml label: that goes through Digraph), each distinct text once."""
    if type(text) is not str:          # a nohtml is quoted, a str of the form '<...>' is not: never cached
        return _quote(text)
    done = _QUOTED.get(text)
    if done is None:
        done = _quote(text)
        if len(_QUOTED) < 8192:    # node ids and attribute values repeat picture after picture
            _QUOTED[text] = done
    return done


def _end(node_id: str) -> str:
    """An edge's end as Digraph.edge quotes it (a ':' would start a port name)."""
    return quote(node_id) if ":" not in node_id else quoting.quote_edge(node_id)


def _made_once(attribute_list):
    """graphviz's a_list / attr_list (each attribute quoted, a plain dict's sorted), each distinct list
    made once: the graph, node and edge attributes and a cluster's are the same picture after picture."""
    made: dict = {}
    attribute_list = getattr(attribute_list, "__wrapped__", attribute_list)

    def once(label=None, kwargs=None, attributes=None):
        if attributes is not None:
            return attribute_list(label, kwargs=kwargs, attributes=attributes)
        # with the types: a nohtml value is quoted where the same str of the form '<...>' is not
        key = (label, type(label), tuple([(k, v, type(v)) for k, v in kwargs.items()]) if kwargs else ())
        done = made.get(key)
        if done is None:
            done = attribute_list(label, kwargs=kwargs)
            if len(made) < 1024:
                made[key] = done
        return done
    return once


class Digraph(graphviz.Digraph):
    """graphviz's Digraph, its attribute lists made once per distinct list (_made_once): what it writes
    is the same, character for character."""

    _a_list = staticmethod(_made_once(quoting.a_list))
    _attr_list = staticmethod(_made_once(quoting.attr_list))


def html(markup: str) -> str:
    """Markup for an HTML-like label: '<' + markup + '>' (what the graphviz package leaves unquoted)."""
    return f"<{markup}>"


# -- labels ----------------------------------------------------------------------
def _span(s: Span) -> str:
    if s.br:
        return f'<BR ALIGN="{s.br_align}"/>' if s.br_align else "<BR/>"
    text = _ESC_CACHE.get(s.text) or esc(s.text)     # esc, its cache read first (most spans are hits)
    if s.strike:
        text = f"<S>{text}</S>"
    if s.italic:
        text = f"<I>{text}</I>"
    if s.bold:
        text = f"<B>{text}</B>"
    return text


def spans_html(spans: list[Span]) -> str:
    """Spans in order; a run of spans with the same colour and size shares one FONT (one loop:
    this runs for every row of every box)."""
    if len(spans) == 1:          # most cells: one span
        s = spans[0]
        return _font(_span(s), s.colour, s.size)
    if not spans:               # a swatch
        return ""
    colour, size = spans[0].colour, spans[0].size
    out, run = [], []
    for s in spans:
        if s.colour != colour or s.size != size:
            out.append(_font("".join(run), colour, size))
            run, colour, size = [], s.colour, s.size
        run.append(_span(s))
    out.append(_font("".join(run), colour, size))
    return "".join(out)


def _font(body: str, colour, size) -> str:
    if colour is None and size is None:
        return body
    a = (f' COLOR="{colour}"' if colour else "") + (f' POINT-SIZE="{size}"' if size else "")
    return f"<FONT{a}>{body}</FONT>"


def _cell(c: Cell, first_row_width=None) -> str:
    # attributes in this order, those set (written out: this runs for every row of every box)
    a = ""
    width = first_row_width if c.bg and first_row_width else c.width
    if width is not None:
        a += f' WIDTH="{width}"'
    if c.height is not None:
        a += f' HEIGHT="{c.height}"'
    if c.colspan is not None:
        a += f' COLSPAN="{c.colspan}"'
    if c.rowspan is not None:
        a += f' ROWSPAN="{c.rowspan}"'
    if c.align is not None:
        a += f' ALIGN="{c.align}"'
    if c.valign is not None:
        a += f' VALIGN="{c.valign}"'
    if c.bg is not None:
        a += f' BGCOLOR="{c.bg}"'
    if c.frame_colour is not None:
        a += f' COLOR="{c.frame_colour}"'
    if c.style is not None:
        a += f' STYLE="{c.style}"'
    if c.border is not None:
        a += f' BORDER="{c.border}"'
    return f"<TD{a}>{_font(spans_html(c.spans), c.colour, c.size)}</TD>"


def table_html(t: Table) -> str:
    a = ""      # attributes in this order, those set (written out: this runs for every box)
    if t.width is not None:
        a += f' WIDTH="{t.width}"'
    if t.height is not None:
        a += f' HEIGHT="{t.height}"'
    if t.border is not None:
        a += f' BORDER="{t.border}"'
    if t.cellborder is not None:
        a += f' CELLBORDER="{t.cellborder}"'
    if t.cellspacing is not None:
        a += f' CELLSPACING="{t.cellspacing}"'
    if t.cellpadding is not None:
        a += f' CELLPADDING="{t.cellpadding}"'
    if t.colour is not None:
        a += f' COLOR="{t.colour}"'
    if t.bg is not None:
        a += f' BGCOLOR="{t.bg}"'
    if t.style is not None:
        a += f' STYLE="{t.style}"'
    first = t.first_row_width
    out = [f"<<TABLE{a}>"]
    for row in t.rows:          # most rows: one cell
        out.append("<TR>" + (_cell(row[0], first) if len(row) == 1 else "".join([_cell(c, first) for c in row]))
                   + "</TR>")
        first = None            # first_row_width: the first row only
    out.append("</TABLE>>")
    return "".join(out)


def label(box: Box) -> str:
    if box.table is None:
        return f"<<B>{esc(box.plain_label or '')}</B>>"
    return table_html(box.table)


# -- the graph --------------------------------------------------------------------
def digraph(graph_attrs=None, node_attrs=None) -> graphviz.Digraph:
    """An empty picture with the house attributes."""
    return Digraph(graph_attr={**GRAPH_ATTRS, **(graph_attrs or {})},
                            node_attr={**NODE_ATTRS, **(node_attrs or {})}, edge_attr=EDGE_ATTRS)


def _node(g: graphviz.Digraph, box: Box, prefix: str) -> None:
    """The node's line, as Digraph.node writes it (the id and every attribute value quoted by graphviz's
    own rule, attributes after the label sorted by name), appended to the Digraph's body directly:
    this runs for every box, and Digraph.node re-checks its arguments on every call. The label is
    always HTML ('<...>'), which graphviz leaves unquoted."""
    attrs = box.attrs
    if box.simple:
        attrs = {**attrs, "margin": GRAPHVIZ_MARGIN}
    extra = "".join([f" {quote(k)}={quote(v)}" for k, v in sorted(attrs.items()) if v is not None]) if attrs else ""
    g.body.append(f"\t{quote(prefix + box.id)} [label={label(box)}{extra}]\n")


def _edge(g: graphviz.Digraph, e: Edge, prefix: str) -> None:
    attrs: dict = {}
    if e.tail_mark is not None:
        attrs.update(xlabel=f"<<B>{esc(e.tail_mark)}</B>>", fontname="Helvetica", fontsize="11")
    if e.minlen is not None:
        attrs["minlen"] = str(e.minlen)
    if e.colour is not None:
        attrs["color"] = e.colour
    if e.mark_colour is not None:
        attrs["fontcolor"] = e.mark_colour
    if e.width is not None:
        attrs["penwidth"] = f"{e.width:g}"
        if e.width > 1:   # Graphviz grows an arrowhead with its pen: keep the usual size
            attrs["arrowsize"] = f"{float(EDGE_ATTRS['arrowsize']) * 1.5 / e.width:.2g}"
    if e.style is not None:
        attrs["style"] = e.style
    g.edge(prefix + e.tail, prefix + e.head, **attrs)


_LEGEND_CELLS: dict = {}


def _legend_cell(swatch: Cell, words: str) -> str:
    """One legend entry's cells. A plain swatch (no text: palette.swatch) is told by its fill, frame,
    style, border and size: its entry is made once, and a legend's entries are the same picture
    after picture."""
    if swatch.spans or swatch.colspan or swatch.rowspan or swatch.align or swatch.valign or swatch.colour \
            or swatch.size:
        return f'{_cell(swatch)}<TD ALIGN="LEFT"><FONT POINT-SIZE="10">{esc(words)}</FONT></TD>'
    key = (swatch.bg, swatch.frame_colour, swatch.style, swatch.border, swatch.width, swatch.height, words)
    done = _LEGEND_CELLS.get(key)
    if done is None:
        done = f'{_cell(swatch)}<TD ALIGN="LEFT"><FONT POINT-SIZE="10">{esc(words)}</FONT></TD>'
        if len(_LEGEND_CELLS) < 1024:
            _LEGEND_CELLS[key] = done
    return done


def legend_html(entries, columns: int = 2) -> str:
    """An HTML-label legend: a swatch and a few words per entry, `columns` entries a row.
    entries: ((swatch cell attributes as a Cell, words), ...)."""
    cells = [_legend_cell(swatch, words) for swatch, words in entries]
    rows = ["<TR>" + "".join(cells[i:i + columns]) + "</TR>" for i in range(0, len(cells), columns)]
    return ('<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="2" CELLPADDING="1">'
            + "".join(rows) + "</TABLE>>")


def title_html(title: str, width=None) -> str:
    """A picture's title, left-aligned in `width` points when given (a set of pictures' titles
    then take the same room)."""
    w = f' WIDTH="{width}"' if width else ""
    return (f'<<TABLE BORDER="0" CELLSPACING="0" CELLPADDING="0"{w}><TR><TD ALIGN="LEFT">'
            f'<FONT POINT-SIZE="12"><B>{esc(title)}</B></FONT></TD></TR></TABLE>>')


def add_scene(g: graphviz.Digraph, scene: Scene, prefix: str = "") -> None:
    """The boxes, clusters and edges of a scene into `g` (ids prefixed: one half of a pair)."""
    children: dict = {}
    for cid, c in scene.clusters.items():
        children.setdefault(c.parent if c.parent in scene.clusters else None, []).append(cid)
    members: dict = {}
    for box in scene.boxes.values():
        members.setdefault(box.cluster if box.cluster in scene.clusters else None, []).append(box)
    _emit(g, None, scene, prefix, children, members)
    body = g.body
    for e in scene.edges:
        if (e.tail_mark is None and e.minlen is None and e.colour is None and e.mark_colour is None
                and e.width is None and e.style is None):
            body.append(f"\t{_end(prefix + e.tail)} -> {_end(prefix + e.head)}\n")   # as Digraph.edges writes it
        else:
            _edge(g, e, prefix)


# Module functions, not closures inside add_scene: a recursive closure is a reference cycle that
# would keep the whole scene alive until the garbage collector runs.
def _has_content(cid, children, members) -> bool:
    return cid in members or any(_has_content(k, children, members) for k in children.get(cid, ()))


def _emit(into, cid, scene, prefix, children, members) -> None:
    for box in members.get(cid, ()):
        _node(into, box, prefix)
    for k in children.get(cid, ()):
        if not _has_content(k, children, members):
            continue
        c = scene.clusters[k]
        sub = Digraph(name=f"cluster_{prefix}{k}")
        sub.attr(label=html(spans_html(c.label)), labeljust="l", style="rounded", color=CLUSTER, fontsize="10")
        _emit(sub, k, scene, prefix, children, members)
        into.subgraph(sub)


def header(graph_attrs=None, node_attrs=None) -> str:
    """The first lines of every picture's DOT: 'digraph {' and the graph, node and edge attributes."""
    source = digraph(graph_attrs, node_attrs).source
    return source[:source.rindex("}")]


def body(scene: Scene, prefix: str = "") -> list[str]:
    """The node, cluster and edge lines of a scene, as `header()` is followed by them."""
    g = digraph()
    add_scene(g, scene, prefix)
    return list(g.body)


def write(scene: Scene) -> str:
    """DOT of one scene: its title (framed above everything, or as the graph's label), its boxes,
    clusters and edges, its legend below."""
    g = digraph()
    if scene.title and not scene.framed_title and not scene.title_on_top:
        g.attr(label=plain(scene.title), labelloc="t")
    if scene.title and scene.title_on_top:
        g.attr(label=title_html(scene.title, scene.title_width), labeljust="l", labelloc="t")
    if scene.framed_title:
        frame = Digraph(name="cluster_title")
        frame.attr(label=title_html(scene.title, scene.title_width), labelloc="t", labeljust="l",
                   peripheries="0", margin="0")
        add_scene(frame, scene)
        g.subgraph(frame)
    else:
        add_scene(g, scene)
    if scene.legend:
        g.attr(label=legend_html(scene.legend, scene.legend_columns), labeljust="l", labelloc="b")
    return g.source


def write_pair(halves, legend, columns: int = 2) -> str:
    """Two scenes side by side in one layout, each in a cluster headed by its title."""
    g = digraph()
    g.attr(label=legend_html(legend, columns), labeljust="l", labelloc="b")
    for key, scene in halves:
        half = Digraph(name=f"cluster_{key}")
        half.attr(color=PAIR, fontsize="13", label=f"<<B>{esc(scene.title)}</B>>", labelloc="t",
                  style="rounded")
        add_scene(half, scene, prefix=key + "_")
        g.subgraph(half)
    return g.source


def write_legend(legend, columns: int = 2) -> str:
    """A legend alone, as one box (stacked pictures share it below them; measuring its width)."""
    g = digraph()
    g.node("legend", legend_html(legend, columns))
    return g.source


def write_boxes(scenes, titles=()) -> str:
    """Every box of `scenes` alone (no edges, one rank), ids prefixed p0_, p1_ ..., titles as
    t0_title ...: the DOT that box sizes are measured from."""
    g = digraph(node_attrs={"height": "0", "width": "0"})
    for i, scene in enumerate(scenes):
        for b in scene.boxes.values():
            _node(g, b, f"p{i}_")
    for i, t in enumerate(titles):
        if t:
            g.node(f"t{i}_title", f"<<B>{esc(t)}</B>>", fontsize="12", margin=GRAPHVIZ_MARGIN)
    return g.source
