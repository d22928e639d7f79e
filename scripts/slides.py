"""Present a notebook's core path as slides for a room, offline: reveal.js (from its npm package,
no CDN), built at projector sizes from the committed notebook.

    bash scripts/slides                       # every notebook -> build/slides/NN_name.slides.html
    bash scripts/slides notebooks/01_*.ipynb  # only these
    python scripts/slides.py --write          # store the slide metadata (for RISE) in the notebooks
    python scripts/slides.py --check          # exit 1 if a notebook's stored metadata is out of date

What a deck is made of (tests/test_slides.py measures it in Chromium at 1280x720):
- the core path only (scripts/skeleton.py): no set-up cells, Going deeper sections, folded check
  cells, solutions or navigation;
- every heading starts a slide, also one in the middle of a markdown cell (the cell is split here,
  not in the notebook); what does not fit under it goes on a "continued" slide, so no slide is
  taller than the screen: paragraphs, code lines, printed lines and table rows are packed by an
  estimate of their height at the deck's sizes (body text 30 px, code 25 px, lines wrapped, never cut);
- a graph is drawn so that its smallest text is MIN_GRAPH_TEXT_PX; one that does not fit the screen
  at that size is shown in parts, one at a time (next click: next part), cut between its clusters
  (a before/after pair: before, then after) and between rows of nodes;
- a cell that raises shows its code with "Predict" and its error on the next click;
- speaker notes on every slide, from the teacher's guide (scripts/teachers_guide.py).

The notebooks' own `slideshow.slide_type` metadata (`--write`, one slide per section) stays for RISE
users; this deck does not read it.
"""
from __future__ import annotations

import argparse
import base64
import copy
import dataclasses
import html
import math
import pathlib
import re
import shutil
import sys
import textwrap
import urllib.parse
import xml.etree.ElementTree as ET

import nbformat
from nbconvert.filters.markdown_mistune import MarkdownWithMath
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer

from backward_twice.picture.figure import WORDS_SUMMARY
from scripts import ROOT, build_site, lengths, nav, npm_install, skeleton, teachers_guide

DEFAULT_OUT = ROOT / "build" / "slides"
REVEAL_VERSION = "4.6.0"                     # the npm package reveal.js
REVEAL_HOME = ROOT / ".reveal"               # npm install --prefix .reveal (ignored by git)
REVEAL_PKG = REVEAL_HOME / "node_modules" / "reveal.js"

# The deck's sizes, in CSS px on a 1280x720 slide (reveal.js scale 1 at that viewport).
WIDTH, HEIGHT = 1280, 720
BODY_PX, CODE_PX, TITLE_PX = 30, 25, 40
MIN_GRAPH_TEXT_PX = 14.5                     # a graph's smallest text (the test asks for >= 14)
PAD = 24                                     # the slide's padding, each side
CONTENT_W = WIDTH - 2 * PAD
BUDGET = HEIGHT - 2 * PAD - 112              # below the slide's title (up to two lines)
CONTINUED_BUDGET = HEIGHT - 2 * PAD - 64     # a continued slide's title: one line
PICTURE_PAD = 12                             # a picture's slide: less padding, a one-line title
PICTURE_BUDGET = HEIGHT - 2 * PICTURE_PAD - 48
BODY_LINE, CODE_LINE = BODY_PX * 1.35, CODE_PX * 1.3
BODY_CHARS = int(CONTENT_W / (BODY_PX * 0.6))           # a conservative average letter width
CODE_CHARS = int((CONTENT_W - 24) / (CODE_PX * 0.61))  # DejaVu Sans Mono: 0.602 em per letter


def slide_types(nb) -> list:
    """The slideshow.slide_type of every cell, from the skeleton (stored for RISE by --write)."""
    sk = skeleton.classify(nb)
    started = False                 # set-up cells before the first section are skipped
    out = []
    for i, cell in enumerate(nb.cells):
        kind = sk.kind[i]
        h = skeleton.heading(cell)
        if kind == "title":
            out.append("slide")
        elif kind == "heading" or (kind == "solutions-heading" and h and not h[1].startswith("Solutions")):
            started = True
            out.append("slide" if h[0] <= 2 else "subslide")
        elif kind in ("deeper", "solution", "solutions-heading", "nav") or not started:
            out.append("skip")
        elif cell.cell_type == "code" and lengths.is_hidden(cell):
            out.append("skip")
        else:
            out.append("-")
    return out


def with_slides(nb):
    """A copy of `nb` with the slide metadata set."""
    nb = copy.deepcopy(nb)
    for cell, kind in zip(nb.cells, slide_types(nb)):
        cell.metadata["slideshow"] = {"slide_type": kind}
    return nb


def out_of_date(nb) -> bool:
    return [c.metadata.get("slideshow", {}).get("slide_type") for c in nb.cells] != slide_types(nb)


# ---------------------------------------------------------------------------------------------
# Blocks: one piece of a slide, with its estimated height in px.

@dataclasses.dataclass
class Block:
    html: str
    height: float
    alone: bool = False          # a picture: a slide of its own


@dataclasses.dataclass
class Slide:
    title: str                   # html
    key: str                     # the section's key in the teacher's guide (teachers_guide.section_key)
    blocks: list
    notes: str = ""
    level: int = 2
    continued: bool = False      # its title on one line (cut with an ellipsis if longer)

    def used(self) -> float:
        return sum(b.height for b in self.blocks)

    def budget(self) -> float:
        return CONTINUED_BUDGET if self.continued else BUDGET


def markdown_html(text: str) -> str:
    renderer = build_site.MathMLRenderer(escape=False, exclude_anchor_links=True)
    out = MarkdownWithMath(renderer=renderer).render(text)
    return re.sub(r'href="(\d\d_\w+)\.ipynb', r'href="\1.slides.html', out)


def wrapped_lines(text: str, width: int) -> int:
    return sum(max(1, math.ceil(len(line) / width)) for line in text.splitlines() or [""])


def text_height(markdown: str) -> float:
    """A markdown block's height at BODY_PX: its text wrapped at BODY_CHARS, list items and
    table rows one line or more each, plus the paragraph's margin."""
    plain = re.sub(r"\]\([^)]*\)", "]", markdown)           # link targets are not shown
    plain = re.sub(r"[`*]|<[^>]+>|\$", "", plain)
    if plain.lstrip().startswith("|"):                     # a table: cells wrap in their column
        rows = [r for r in plain.splitlines() if r.strip() and not re.match(r"^\|[\s:|-]+\|$", r.strip())]
        cols = max(1, rows[0].count("|") - 1) if rows else 1
        per = max(6, BODY_CHARS // cols - 6)
        lines = sum(max(math.ceil(len(c.strip()) / per) for c in r.strip().strip("|").split("|")) for r in rows)
        return lines * BODY_LINE + len(rows) * 14 + 24
    return wrapped_lines(plain, BODY_CHARS) * BODY_LINE + 24


def markdown_blocks(text: str) -> list:
    """Paragraphs, lists and tables of a markdown text, each a Block; a table taller than a slide
    is cut into row groups (each with the header)."""
    out = []
    for part in re.split(r"\n\s*\n", text.strip()):
        if not part.strip():
            continue
        rows = part.strip().splitlines()
        items = re.split(r"\n(?=\s{0,3}(?:[-*+]|\d+\.)\s)", part.strip())
        if not rows[0].startswith("|") and len(items) > 1 and text_height(part) > BUDGET:
            chunk = []                                    # a long list: items packed into slides
            for item in items:
                if chunk and text_height("\n".join(chunk + [item])) > BUDGET:
                    out.append(Block(markdown_html("\n".join(chunk)), text_height("\n".join(chunk))))
                    chunk = []
                chunk.append(item)
            out.append(Block(markdown_html("\n".join(chunk)), text_height("\n".join(chunk))))
        elif rows[0].startswith("|") and text_height(part) > BUDGET and len(rows) > 3:
            head, body, chunk = rows[:2], rows[2:], []
            for row in body:
                if chunk and text_height("\n".join(head + chunk + [row])) > BUDGET:
                    out.append(Block(markdown_html("\n".join(head + chunk)), text_height("\n".join(head + chunk))))
                    chunk = []
                chunk.append(row)
            out.append(Block(markdown_html("\n".join(head + chunk)), text_height("\n".join(head + chunk))))
        else:
            out.append(Block(markdown_html(part), text_height(part)))
    return out


def pre_blocks(text: str, css: str, highlight_code: bool = False, extra: str = "") -> list:
    """Code or printed text at CODE_PX, wrapped (never cut), in pieces that each fit a slide."""
    lines = text.rstrip("\n").splitlines() or [""]
    room = int((BUDGET - 40) // CODE_LINE)
    pieces, chunk, used = [], [], 0
    for line in lines:
        n = max(1, math.ceil(len(line) / CODE_CHARS))
        if chunk and used + n > room:
            pieces.append(chunk)
            chunk, used = [], 0
        chunk.append(line)
        used += n
    pieces.append(chunk)
    out = []
    for chunk in pieces:
        body = "\n".join(chunk)
        inner = (highlight(body, PythonLexer(), HtmlFormatter(nowrap=True)) if highlight_code
                 else html.escape(body))
        n = sum(max(1, math.ceil(len(line) / CODE_CHARS)) for line in chunk)
        out.append(Block(f'<pre class="{css}"{extra}><code>{inner}</code></pre>', n * CODE_LINE + 36))
    return out


# ---------------------------------------------------------------------------------------------
# Graphs: drawn at MIN_GRAPH_TEXT_PX, cut into parts that fit the screen.

SVG_NS = "{http://www.w3.org/2000/svg}"


def _points(el) -> list:
    """The (x, y) points that bound one drawn element, in its own user units."""
    tag = el.tag.replace(SVG_NS, "")
    if tag in ("polygon", "polyline", "path"):     # a path's numbers are x,y pairs (Graphviz: M, C)
        nums = [float(v) for v in re.findall(r"-?[\d.]+", el.get("points", el.get("d", "")))]
        return list(zip(nums[0::2], nums[1::2]))
    if tag == "ellipse":
        cx, cy, rx, ry = (float(el.get(k, 0)) for k in ("cx", "cy", "rx", "ry"))
        return [(cx - rx, cy - ry), (cx + rx, cy + ry)]
    if tag == "text":
        x, y, size = float(el.get("x", 0)), float(el.get("y", 0)), float(el.get("font-size", 10))
        w = len("".join(el.itertext())) * size * 0.6
        x0 = {"middle": x - w / 2, "end": x - w}.get(el.get("text-anchor"), x)
        return [(x0, y - size), (x0 + w, y + size * 0.3)]
    return []


def _graph_boxes(svg_el, ox: float, oy: float, sc: float) -> tuple:
    """(font sizes, boxes) of one Graphviz drawing (an <svg> element), mapped into the outer
    viewBox by x' = ox + sc * x, y' = oy + sc * y. A drawing made of drawings (a stacked pair:
    <svg> elements inside the <svg>) gives each inner one's boxes, and the inner one as a cluster."""
    sizes, boxes = [], []
    inner = svg_el.findall(f"{SVG_NS}svg")
    for child in inner:
        vb = [float(v) for v in child.get("viewBox", "0 0 0 0").replace(",", " ").split()]
        x, y = float(child.get("x", 0)), float(child.get("y", 0))
        w, h = float(child.get("width", vb[2]) or vb[2]), float(child.get("height", vb[3]) or vb[3])
        k = w / vb[2] if vb[2] else 1.0
        sub_sizes, sub_boxes = _graph_boxes(child, ox + sc * (x - vb[0] * k), oy + sc * (y - vb[1] * k), sc * k)
        sizes += sub_sizes
        boxes += sub_boxes + [("cluster", ox + sc * x, oy + sc * y, ox + sc * (x + w), oy + sc * (y + h))]
    graph = svg_el.find(f"{SVG_NS}g")
    if graph is None:
        return sizes, boxes
    s, tx, ty = 1.0, 0.0, 0.0
    t = graph.get("transform") or ""
    m = re.search(r"scale\(([\d.]+)", t)
    s = float(m.group(1)) if m else 1.0
    m = re.search(r"translate\(([-\d.]+)[ ,]+([-\d.]+)", t)
    tx, ty = (float(m.group(1)), float(m.group(2))) if m else (0.0, 0.0)

    def box(kind, els):
        shapes = [el for el in els if el.tag.replace(SVG_NS, "") != "text"]
        if kind in ("node", "cluster") and any(_points(el) for el in shapes):
            els = shapes                             # the drawn outline, not text width estimates
        pts = [(ox + sc * (x + tx) * s, oy + sc * (y + ty) * s) for el in els for x, y in _points(el)]
        if not pts:
            return None
        xs, ys = [p[0] for p in pts], [p[1] for p in pts]
        return (kind, min(xs), min(ys), max(xs), max(ys))

    sizes += [float(el.get("font-size")) * s * sc for el in graph.iter() if el.get("font-size")]
    for g in graph:
        tag, cls = g.tag.replace(SVG_NS, ""), g.get("class", "")
        if tag == "g" and cls in ("node", "cluster"):
            b = box(cls, list(g.iter()))
        elif tag == "g" and cls == "edge":
            b = box("label", [t for t in g.iter(f"{SVG_NS}text")])
        elif tag in ("text", "polygon") and not (tag == "polygon" and g.get("fill") == "white"
                                                 and g.get("stroke") in ("none", "transparent")):
            b = box("legend", [g])
        else:
            b = None
        if b:
            boxes.append(b)
    return sizes, boxes


def _svg_geometry(svg: str):
    """(viewBox [x, y, w, h], smallest font in viewBox units, boxes) of a Graphviz SVG. Boxes:
    [(kind, x0, y0, x1, y1)] in viewBox units for each cluster, node, edge label and legend item."""
    root = ET.fromstring(re.sub(r"<!DOCTYPE[^>]*>", "", svg, flags=re.S).encode())
    view = [float(v) for v in root.get("viewBox", "").replace(",", " ").split()]
    if len(view) != 4:
        raise ValueError("an SVG without a viewBox")
    sizes, boxes = _graph_boxes(root, 0.0, 0.0, 1.0)
    return view, (min(sizes) if sizes else None), boxes


def _cuts(lo: float, hi: float, window: float, spans: list) -> list:
    """[(start, end)] covering lo..hi, each at most `window` long where it can be, cut only where no
    span (a, b) lies across the cut; a span longer than the window is cut through."""
    pieces, start = [], lo
    while hi - start > window:
        limit = start + window
        ok = [c for c in {b for _, b in spans} | {a for a, _ in spans}
              if start + window / 4 < c <= limit and not any(a < c - 0.5 and c + 0.5 < b for a, b in spans)]
        end = max(ok) if ok else limit
        if ok:                                        # in the middle of the gap: no edge of a box shows
            before = [b for _, b in spans if b <= end + 0.5]
            after = [a for a, _ in spans if a >= end - 0.5]
            if before and after and max(before) <= min(after):
                end = min(max((max(before) + min(after)) / 2, start + window / 4), limit)
        pieces.append((start, end))
        start = end
    pieces.append((start, hi))
    return pieces


def graph_parts(svg: str, width: float = CONTENT_W, height: float = BUDGET) -> list:
    """The SVG drawn so its smallest text is MIN_GRAPH_TEXT_PX, as [(svg, width px, height px)]:
    one part when it fits `width` x `height`, else parts cut between clusters (left to right) and
    then between rows of nodes (top to bottom), each part no larger than the screen."""
    view, smallest, boxes = _svg_geometry(svg)
    x0, y0, w, h = view
    k = MIN_GRAPH_TEXT_PX / smallest if smallest else min(width / w, height / h)
    if not boxes:                                  # not a Graphviz drawing: the whole, fitted
        k = min(k, width / w, height / h)
        boxes = [("node", x0, y0, x0 + w, y0 + h)]
    columns = _cuts(x0, x0 + w, width / k,
                    [(b[1], b[3]) for b in boxes if b[0] in ("cluster", "node", "label")])
    parts = []
    for cx0, cx1 in columns:
        inside = [b for b in boxes if b[0] != "cluster" and b[3] > cx0 and b[1] < cx1]
        for cy0, cy1 in _cuts(y0, y0 + h, height / k, [(b[2], b[4]) for b in inside]):
            if not any(b[4] > cy0 and b[2] < cy1 for b in inside):
                continue                                   # nothing drawn there
            pw, ph = (cx1 - cx0) * k, (cy1 - cy0) * k
            head = (f'<svg width="{pw:.1f}px" height="{ph:.1f}px" '
                    f'viewBox="{cx0:.2f} {cy0:.2f} {cx1 - cx0:.2f} {cy1 - cy0:.2f}"')
            part = re.sub(r"<svg\b[^>]*?(?=\s+xmlns=|\s*>)", head, svg, count=1, flags=re.S)
            legend_only = all(b[0] == "legend" for b in inside if b[4] > cy0 and b[2] < cy1)
            parts.append((legend_only, part, pw, ph))
    return [p[1:] for p in sorted(parts, key=lambda p: p[0])]     # the legend last (stable sort)


WORDS_LINE = 30        # a picture's "The picture in words" line (a closed <details>), px


def picture_block(svg: str, alt: str, words: str | None = None) -> Block:
    """A graph as one slide: its parts stacked, one shown at a time (reveal.js fragments).
    words: the picture's full description (the output's <details class="bt-words">), one click
    away under it: a closed <details>, which opens over the picture, scrolling."""
    parts = graph_parts(svg, height=PICTURE_BUDGET - (WORDS_LINE if words else 0))
    imgs = []
    for n, (part, pw, ph) in enumerate(parts):
        src = "data:image/svg+xml;base64," + base64.b64encode(part.encode()).decode()
        if len(parts) == 1:
            cls = 'class="bt-graph"'
        elif n == 0:
            cls = 'class="bt-graph fragment fade-out" data-fragment-index="0"'
        elif n == len(parts) - 1:
            cls = f'class="bt-graph fragment" data-fragment-index="{n - 1}"'
        else:
            cls = f'class="bt-graph fragment current-visible" data-fragment-index="{n - 1}"'
        label = f"{alt} (part {n + 1} of {len(parts)})" if len(parts) > 1 else alt
        imgs.append(f'<img {cls} src="{src}" width="{pw:.0f}" height="{ph:.0f}" '
                    f'alt="{html.escape(label, quote=True)}">')
    tallest = max(ph for _, _, ph in parts)
    more = ""
    if words:
        more = (f'<details class="bt-words"><summary>{WORDS_SUMMARY}</summary>'
                f'<pre tabindex="0">{html.escape(words)}</pre></details>')
        tallest += WORDS_LINE
    return Block(f'<div class="r-stack bt-picture" data-parts="{len(parts)}">{"".join(imgs)}</div>{more}', tallest,
                 alone=True)


def svg_of(src: str) -> str | None:
    m = re.match(r"data:image/svg\+xml(;base64)?,(.*)", html.unescape(src), re.S)
    if not m:
        return None
    return base64.b64decode(m.group(2)).decode() if m.group(1) else urllib.parse.unquote(m.group(2))


def html_to_text(fragment: str) -> str:
    text = re.sub(r"<br\s*/?>|</p>|</div>|</figcaption>|</tr>", "\n", fragment)
    return html.unescape(re.sub(r"<[^>]+>", "", text)).strip()


ANSI = re.compile(r"\x1b\[[0-9;]*m")


def output_blocks(output) -> list:
    kind = output.get("output_type")
    if kind == "stream":
        return pre_blocks(output.get("text", ""), "bt-out")
    if kind == "error":
        return []                                            # shown by the cell, on the next click
    data = output.get("data", {})
    page = data.get("text/html", "")
    if isinstance(page, list):
        page = "".join(page)
    if "data:image/svg+xml" in page:
        out = []
        rest = page
        said = re.search(r'<details class="bt-words">.*?<pre[^>]*>(.*?)</pre>', page, re.S)
        words = html.unescape(said.group(1)) if said else None
        for m in re.finditer(r"<img\b[^>]*>", page):
            src = re.search(r'src="([^"]*)"', m.group(0))
            svg = svg_of(src.group(1)) if src else None
            if svg:
                alt = re.search(r'alt="([^"]*)"', m.group(0))
                out.append(picture_block(svg, html.unescape(alt.group(1)) if alt else "graph", words))
            rest = rest.replace(m.group(0), "")
        words = html_to_text(re.sub(r"<figcaption.*?</figcaption>", "", rest, flags=re.S))
        return (pre_blocks(words, "bt-out") if words else []) + out
    if "image/png" in data:
        src = "data:image/png;base64," + data["image/png"].replace("\n", "")
        # the chart's own description (helpers.plots.figure_alt, stored with the output by
        # helpers.notebook.setup): what it shows and finds, not the word "chart"
        alt = (output.get("metadata", {}).get("image/png", {}) or {}).get("alt") or "a chart (no description stored)"
        return [Block(f'<img class="bt-chart" src="{src}" alt="{html.escape(alt, quote=True)}">', BUDGET, alone=True)]
    if "text/markdown" in data:
        return markdown_blocks(data["text/markdown"] if isinstance(data["text/markdown"], str)
                               else "".join(data["text/markdown"]))
    if page and "<table" in page:
        return pre_blocks(data.get("text/plain", html_to_text(page)), "bt-out")
    if "text/plain" in data:
        text = data["text/plain"] if isinstance(data["text/plain"], str) else "".join(data["text/plain"])
        return pre_blocks(text, "bt-out")
    return []


PREDICT = "Predict first: does it run to the end? If not, which error? (click)"


def error_block(output) -> Block:
    """The question, then on the next click in its place the error (its type and first sentence)."""
    line = teachers_guide.error_line(output)
    (error,) = pre_blocks("\n".join(textwrap.wrap(line, CODE_CHARS)) or line, "bt-error fragment",
                          extra=' data-fragment-index="0"')
    question = f'<p class="bt-predict fragment fade-out" data-fragment-index="0">{PREDICT}</p>'
    # alone: what follows (the cell's check, expect_raised(...), its words) goes to the next slide,
    # after the reveal: nothing on the slide gives the answer away before the click (issue 30 §5)
    return Block(f'<div class="r-stack bt-predict-stack">{question}{error.html}</div>',
                 max(error.height, BODY_LINE * 2 + 12), alone=True)


# ---------------------------------------------------------------------------------------------
# A notebook -> slides.

def heading_pieces(text: str) -> list:
    """[(level or 0, heading text or '', body)] of a markdown cell, split at every heading line
    (outside code fences)."""
    pieces, level, title, body = [], 0, "", []
    for line, is_text in lengths.outside_fences(text.splitlines()):
        m = lengths.HEADING.match(line) if is_text else None
        if m:
            if level or "".join(body).strip():
                pieces.append((level, title, "\n".join(body)))
            level, title, body = len(m.group(1)), m.group(2), []
        else:
            body.append(line)
    if level or "".join(body).strip():
        pieces.append((level, title, "\n".join(body)))
    return pieces


def deck(nb, notes=None) -> list:
    """The slides of a notebook's core path. `notes`: teachers_guide.Notes (speaker notes)."""
    types = slide_types(nb)
    slides: list = []
    current_key = "title"

    def new_slide(title, key, level):
        shown = markdown_html(re.sub(r"^(\d+)\.", r"\1\\.", title)).strip()   # "7. ..." is not a list
        shown = re.sub(r"^<p>(.*)</p>$", r"\1", shown, flags=re.S)
        slides.append(Slide(shown, key, [], level=level))

    def continued():
        s = slides[-1]
        title = re.sub(r' <span class="bt-cont">.*', "", s.title)
        slides.append(Slide(title + ' <span class="bt-cont">(continued)</span>', s.key, [], level=s.level,
                            continued=True))

    def add(block):
        s = slides[-1]
        if s.blocks and (block.alone or s.blocks[-1].alone or s.used() + block.height > s.budget()):
            continued()
        slides[-1].blocks.append(block)

    revealed = False      # the current slide shows a revealed error's check: no new question on it
    for (cell, pieces), kind in zip(lengths.sections(nb), types):
        if kind == "skip":
            continue
        if cell.cell_type == "markdown":
            revealed = False            # its core part: no Going deeper or Solutions inside
            core = "\n".join(p.text for p in pieces if p.part == "core")
            for level, title, body in heading_pieces(core):
                if level:
                    key = "title" if level == 1 else teachers_guide.section_key(title)
                    if level >= 3 and not re.fullmatch(r"\d+(?:\.\d+)*|Exercise \d+\.\d+", key):
                        key = current_key       # an unnumbered sub-heading: still its section's slides
                    current_key = key
                    new_slide(title, current_key, level)
                for block in markdown_blocks(body):
                    add(block)
            continue
        errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
        # the %raises marker (helpers.notebook) would tell the class the answer: not shown
        code = pre_blocks(re.sub(r"\A%raises[^\n]*\n", "", cell.source), "bt-code", highlight_code=True)
        if errors:                                # the code's last lines, the question and the error together
            unit = error_block(errors[0])
            if revealed and slides[-1].blocks:    # the last error's check would answer this one
                continued()
            for block in code[:-1]:
                add(block)
            if slides[-1].blocks and slides[-1].used() + code[-1].height + unit.height > slides[-1].budget():
                continued()
            add(code[-1])
            slides[-1].blocks.append(unit)
            slides[-1].notes = notes.predict(slides[-1].key, errors[0]) if notes else ""
            revealed = True
        else:
            for block in code:
                add(block)
        for output in cell.get("outputs", []):
            for block in output_blocks(output):
                add(block)
    for s in slides:
        if notes and not s.notes:
            s.notes = notes.section(s.key)
    return slides


# ---------------------------------------------------------------------------------------------
# The page.

CSS = f"""
.reveal .slide-number {{ background: #3b3b3b; color: #fff; }}   /* was white on #999 (2.84:1): now 11:1 */
.reveal .controls button:focus-visible {{ outline: 3px solid #1f5f99; outline-offset: 2px; }}   /* WCAG 2.4.7 */
.reveal {{ font-family: system-ui, "DejaVu Sans", sans-serif; font-size: {BODY_PX}px; color: #111; }}
.reveal .slides {{ text-align: left; }}
.reveal .slides > section {{ padding: {PAD}px; box-sizing: border-box; height: {HEIGHT}px; }}
.reveal h1, .reveal h2, .reveal h3, .reveal h4 {{ font-family: inherit; text-transform: none; font-size: {TITLE_PX}px;
  margin: 0 0 16px 0; line-height: 1.2; color: #0b3d91; }}
.reveal h1.bt-deck-title {{ font-size: 48px; }}
.reveal .bt-cont {{ color: #666; font-size: {BODY_PX}px; font-weight: normal; }}
.reveal p, .reveal li, .reveal td, .reveal th {{ font-size: {BODY_PX}px; line-height: 1.35; }}
.reveal p {{ margin: 0 0 12px 0; }}
.reveal ul, .reveal ol {{ display: block; margin: 0 0 12px 1.2em; }}
.reveal table {{ border-collapse: collapse; margin: 0 0 12px 0; width: 100%; }}
.reveal table td, .reveal table th {{ overflow-wrap: anywhere; }}
.reveal table td, .reveal table th {{ border: 1px solid #ccc; padding: 2px 8px; }}
.reveal code {{ font-family: "DejaVu Sans Mono", monospace; font-size: {CODE_PX}px; }}
.reveal pre {{ width: 100%; margin: 0 0 12px 0; box-shadow: none; font-size: {CODE_PX}px; line-height: 1.3; }}
.reveal pre code {{ display: block; white-space: pre-wrap; overflow-wrap: anywhere; max-height: none;
  overflow: visible; padding: 8px 12px; font-size: {CODE_PX}px; line-height: 1.3; }}
.reveal pre.bt-code code {{ background: #f5f5f5; }}
.reveal pre.bt-out code {{ background: #fff; border-left: 4px solid #ccc; }}
.reveal pre.bt-error code {{ background: #fdecea; color: #8a1c1c; }}
.reveal .bt-predict {{ color: #0b3d91; font-weight: bold; }}
.reveal section.bt-cont-slide h2 {{ white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }}
.reveal .slides > section.bt-pic {{ padding: {PICTURE_PAD}px {PAD}px; }}
.reveal section.bt-pic h2 {{ font-size: {BODY_PX}px; white-space: nowrap; overflow: hidden; text-overflow: ellipsis;
  margin: 0 0 8px 0; }}
.reveal .bt-picture img {{ max-width: none; max-height: none; margin: 0; }}
.reveal details.bt-words {{ font-size: 20px; line-height: {WORDS_LINE}px; }}
.reveal details.bt-words > summary {{ cursor: pointer; color: #0b3d91; }}
.reveal details.bt-words[open] > pre {{ position: absolute; left: 0; right: 0; top: 56px; bottom: {WORDS_LINE}px;
  overflow: auto; background: #fff; border: 1px solid #555; box-sizing: border-box;
  font-size: 18px; line-height: 1.3; white-space: pre-wrap; padding: 8px; margin: 0; z-index: 5; }}
.reveal details.bt-words[open] > summary {{ position: absolute; left: 0; bottom: 0; z-index: 6; background: #fff; }}
.reveal img.bt-chart {{ max-width: {CONTENT_W}px; max-height: {BUDGET}px; margin: 0; }}
.reveal .r-stack {{ justify-items: start; }}
.reveal .r-stack > * {{ margin: 0; }}
.reveal .slides section .fragment {{ transition: none; }}
""" + HtmlFormatter().get_style_defs(".reveal pre code")


def page(slides: list, deck_title: str) -> str:
    sections = []
    for s in slides:
        tag = "h1" if s.key == "title" and not s.title.endswith("</span>") else "h2"
        cls = ' class="bt-deck-title"' if tag == "h1" else ""
        body = "\n".join(b.html for b in s.blocks if b.html)
        title, section_cls = s.title, ' class="bt-cont-slide"' if s.continued else ""
        parts = re.search(r'data-parts="(\d+)"', body)
        if parts:                                    # a picture's slide
            section_cls = ' class="bt-pic"'
            if int(parts.group(1)) > 1:
                title += f' <span class="bt-cont">({parts.group(1)} parts, one per click)</span>'
        notes = f'<aside class="notes">{markdown_html(s.notes)}</aside>' if s.notes else ""
        sections.append(f'<section{section_cls} data-key="{html.escape(s.key, quote=True)}">\n<{tag}{cls}>{title}</{tag}>\n'
                        f"{body}\n{notes}\n</section>")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<title>{html.escape(deck_title)}: slides</title>
<link rel="stylesheet" href="reveal.js/dist/reveal.css">
<link rel="stylesheet" href="reveal.js/dist/theme/white.css">
<style>{CSS}</style>
</head><body>
<div class="reveal"><div class="slides">
{chr(10).join(sections)}
</div></div>
<script src="reveal.js/dist/reveal.js"></script>
<script src="reveal.js/plugin/notes/notes.js"></script>
<script>
Reveal.initialize({{controls: true, progress: true, hash: true, slideNumber: "c/t", transition: "none",
  center: false, plugins: [RevealNotes], width: {WIDTH}, height: {HEIGHT}, margin: 0, minScale: 0.2, maxScale: 2}});
</script>
</body></html>
"""


def install_reveal() -> pathlib.Path:
    """reveal.js from its npm package, once, into .reveal/ (the slides then need no network)."""
    npm_install(f"reveal.js@{REVEAL_VERSION}", REVEAL_HOME, REVEAL_PKG / "dist" / "reveal.js", "slides")
    return REVEAL_PKG


def build(out=DEFAULT_OUT, only=None) -> list:
    reveal = install_reveal()
    out.mkdir(parents=True, exist_ok=True)
    dest = out / "reveal.js"
    if not dest.is_dir():
        for part in ("dist", "plugin"):
            shutil.copytree(reveal / part, dest / part)
    written = []
    for path in nav.notebooks():
        if only and path.name not in only:
            continue
        nb = nbformat.read(path, as_version=4)
        slides = deck(nb, teachers_guide.notes(path))
        target = out / (path.stem + ".slides.html")
        target.write_text(page(slides, nav.title_of(nb)), encoding="utf-8")
        written.append(target)
    return written


def main(argv) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=pathlib.Path, default=DEFAULT_OUT)
    ap.add_argument("--write", action="store_true", help="store the slide metadata in the notebooks")
    ap.add_argument("--check", action="store_true", help="exit 1 if a notebook's slide metadata is out of date")
    ap.add_argument("notebooks", nargs="*")
    args = ap.parse_args(argv)
    only = {pathlib.Path(n).name for n in args.notebooks} or None
    paths = [p for p in nav.notebooks() if not only or p.name in only]
    if args.check or args.write:
        stale = [p for p in paths if out_of_date(nbformat.read(p, as_version=4))]
        for p in stale:
            if args.write:
                nbformat.write(with_slides(nbformat.read(p, as_version=4)), p)
                print(f"updated {p.relative_to(ROOT)}")
            else:
                print(f"out of date: {p.relative_to(ROOT)} (run: python scripts/slides.py --write)")
        return 1 if stale and args.check else 0
    pages = build(args.out.resolve(), only)
    print(f"slides: {len(pages)} notebooks in {args.out}; open {pages[0] if pages else args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
