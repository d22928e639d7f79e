"""DOT in, SVG out, and what an SVG's size means at notebook width.

`svg_from_dot` is the one call that lays a picture out (backward_twice.layout, engine-robust's bounded
layout: the DOT is measured, then laid out in-process, simplified in a child process under a time
limit, or refused). `svg_size` is the one reader of an SVG's size; `smallest_text_px` and `reads_at` the one
rule for whether a picture reads at OUTPUT_PX: 9 px in Going deeper, 11 px in core paths.
"""
from __future__ import annotations

import base64
import html
import re

from .. import layout as bounded
from ..layout import engine, quiet_fd2, refused  # noqa: F401 (re-exported)

OUTPUT_PX = 860            # a notebook's output area, in px
MIN_TEXT_PX = 9.0          # the smallest readable text anywhere (Going deeper)
CORE_TEXT_PX = 11.0        # ... in a core path (issue 20 §4)
CORE_MAX_HEIGHT_PX = 900   # a core path's picture is at most this tall at OUTPUT_PX (issue 20 §4)
# A picture up to this wide shows its smallest font (10 pt) at >= 9 px at OUTPUT_PX: 9 pt x 4/3
# x 860 px / (width pt x 4/3) >= 9 px <=> width <= 860 pt.
READABLE_WIDTH_PT = 860

# The one reader of an SVG's size: its first <svg> tag's width and height in pt, and the viewBox
# right after them when there is one (as Graphviz writes it; stack_svgs rewrites that head).
_SVG_HEAD = re.compile(r'<svg[^>]*?width="([\d.]+)pt"[^>]*?height="([\d.]+)pt"(?:\s+viewBox="([^"]*)")?')


def svg_size(svg: str) -> tuple[float, float]:
    """(width, height) of an SVG in pt; (0, 0) when it says none."""
    m = _SVG_HEAD.search(svg)
    return (float(m.group(1)), float(m.group(2))) if m else (0.0, 0.0)


def svg_width_pt(svg: str) -> float:
    return svg_size(svg)[0]


def shown_px(svg: str) -> tuple[float, float]:
    """(width pt, height in px) of an SVG shown at most OUTPUT_PX wide (1 pt = 4/3 px).

    Example (run by tests/test_docstrings.py):

        >>> import torch, backward_twice as bt
        >>> a = torch.tensor([1.0, 2.0], requires_grad=True)
        >>> width_pt, height_px = bt.shown_px(bt.draw((a * a).sum()).svg)
        >>> height_px > 0
        True
    """
    w, h = svg_size(svg)
    return w, h * 4 / 3 * (min(1.0, OUTPUT_PX / (w * 4 / 3)) if w else 1.0)


def _view_width(svg: str) -> float:
    """The width of an SVG's drawing in its own units (its viewBox; its width when it has none): what
    its font sizes are in. A picture shown smaller than drawn (at_shown_size) has a smaller width."""
    m = _SVG_HEAD.search(svg)
    if not m:
        return 0.0
    box = (m.group(3) or "").split()
    return float(box[2]) if len(box) == 4 else float(m.group(1))


def smallest_text_px(svg: str) -> float:
    """How tall the smallest text of a Graphviz SVG is, in px, shown at most OUTPUT_PX wide."""
    width, drawn = svg_width_pt(svg), _view_width(svg)
    sizes = [float(v) for v in re.findall(r'font-size="([\d.]+)"', svg)]
    if not width or not drawn or not sizes:
        return float("inf")
    return min(sizes) * min(width * 4 / 3, OUTPUT_PX) / drawn


def reads_at(svg: str, min_px: float = MIN_TEXT_PX) -> bool:
    """The one readability rule: the smallest text is at least `min_px` at notebook width."""
    return smallest_text_px(svg) >= min_px


def _fits_as_drawn(svg: str) -> bool:
    return reads_at(svg, CORE_TEXT_PX) and shown_px(svg)[1] <= CORE_MAX_HEIGHT_PX


def _shown_scale(svg: str) -> float | None:
    """How much smaller than drawn (1: as drawn) a picture is shown so that it keeps the rule: a
    picture too tall whose text is larger than CORE_TEXT_PX is shown smaller, down to that text
    size; None when no size keeps it."""
    if refused(svg):
        return None
    if _fits_as_drawn(svg):
        return 1.0
    text, height = smallest_text_px(svg), shown_px(svg)[1]
    if not height or text < CORE_TEXT_PX:
        return None
    scale = CORE_MAX_HEIGHT_PX / height * 0.999     # the size written rounds to 0.01 pt
    return scale if text * scale >= CORE_TEXT_PX else None


def fits(svg: str) -> bool:
    """THE rule every picture is held to (issue 28 §1): laid out (not refused), its smallest text at
    least CORE_TEXT_PX and at most CORE_MAX_HEIGHT_PX tall, shown at most OUTPUT_PX wide: as drawn,
    or smaller than drawn when its text is larger than it needs to be (at_shown_size shows it so)."""
    return _shown_scale(svg) is not None


def at_shown_size(svg: str) -> str:
    """`svg` with the size it is shown at written in it: smaller than drawn when only that keeps the
    rule (fits), unchanged otherwise. Its viewBox keeps the drawing's units, so the browser scales it."""
    scale = _shown_scale(svg)
    if scale is None or scale >= 1.0:
        return svg
    m = _SVG_HEAD.search(svg)
    w, h = float(m.group(1)), float(m.group(2))
    box = m.group(3) or f"0.00 0.00 {w:.2f} {h:.2f}"
    scale *= min(1.0, OUTPUT_PX / (w * 4 / 3))     # relative to its size as shown (at most OUTPUT_PX wide)
    head = (svg[m.start():m.start(1)] + f"{w * scale:.2f}" + svg[m.end(1):m.start(2)] + f"{h * scale:.2f}"
            + svg[m.end(2):m.end(2) + 3])
    if m.group(3) is None:
        return svg[:m.start()] + head + f' viewBox="{box}"' + svg[m.end():]
    return svg[:m.start()] + head + svg[m.end(2) + 3:]


def svg_from_dot(source: str) -> str:
    """THE layout call: every picture's SVG comes from here (backward_twice.layout: under a time limit,
    simplified or refused when too costly, the picture saying so)."""
    return laid_out(source, "svg")


def laid_out(source: str, fmt: str = "svg") -> str:
    """`source` laid out by dot in `fmt` ('svg', 'plain', 'json'), by backward_twice.layout."""
    return bounded.laid_out(source, fmt)


def layout_note(source: str) -> str | None:
    """What backward_twice.layout will simplify or refuse in this source, in words (None: nothing)."""
    return bounded.note(source)


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


def svg_img(svg: str, alt: str, style: str = "") -> str:
    """An SVG as an <img> with a data: URI. JupyterLab renders raw SVG only in trusted notebooks
    and its sanitizer drops inline <svg>, but keeps images; nbconvert passes them through too.
    (nbval blanks the data: tests/nbval_sanitize.cfg.)"""
    data = base64.b64encode(svg.encode("utf-8")).decode("ascii")
    style = f' style="{style}"' if style else ""
    return f'<img alt="{html.escape(alt, quote=True)}" src="data:image/svg+xml;base64,{data}"{style}>'
