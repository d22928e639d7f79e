"""Every picture committed in a notebook is readable at JupyterLab's output width.

JupyterLab shows an output image at its natural size, scaled down to fit the output area
(about 860 px wide on a laptop). An SVG's natural width is its `width` attribute (Graphviz
writes points: 1 pt = 4/3 px); its text is drawn in user units of its viewBox. So the
height of its smallest text on screen is

    smallest font-size x (shown width in px / viewBox width), shown width = min(natural, 860 px)

and it must be at least 9 px. The test reads every SVG a code cell's outputs carry
(`image/svg+xml`, and SVG images or inline SVG inside `text/html`: the stepper's frames)
and fails naming the notebook and the cell.
"""
from __future__ import annotations

import base64
import pathlib
import re

import nbformat
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
OUTPUT_WIDTH_PX = 860
MIN_TEXT_PX = 9.0
_UNIT_PX = {"pt": 4 / 3, "px": 1.0, "": 1.0, "in": 96.0, "cm": 96 / 2.54, "mm": 96 / 25.4}


def _length_px(value: str) -> float | None:
    m = re.fullmatch(r"\s*([\d.]+)\s*(pt|px|in|cm|mm|)\s*", value or "")
    return float(m.group(1)) * _UNIT_PX[m.group(2)] if m else None


def svg_text_px(svg: str, width_px: float = OUTPUT_WIDTH_PX) -> tuple:
    """(smallest text height in px when shown at most `width_px` wide, shown width in px).
    None for the height when the SVG has no text."""
    head = re.search(r"<svg\b[^>]*>", svg, re.S)
    if head is None:
        raise ValueError("not an SVG")
    attrs = dict(re.findall(r'([\w:-]+)="([^"]*)"', head.group(0)))
    view = [float(v) for v in attrs.get("viewBox", "").replace(",", " ").split()] or None
    natural = _length_px(attrs.get("width", ""))
    if natural is None:
        natural = view[2] if view else width_px
    shown = min(natural, width_px)
    user_width = view[2] if view else natural
    # Graphviz scales its drawing with a transform on the first group: scale(s s)
    scale = re.search(r'<g[^>]*transform="scale\(([\d.]+)', svg)
    s = float(scale.group(1)) if scale else 1.0
    sizes = [float(v) for v in re.findall(r'font-size="([\d.]+)', svg)]
    sizes += [float(v) for v in re.findall(r"font-size:\s*([\d.]+)px", svg)]
    if not sizes:
        return None, shown
    return min(sizes) * s * shown / user_width, shown


def svgs_in(output) -> list:
    """Every SVG document an output carries."""
    data = output.get("data", {}) if output.get("output_type") in ("display_data", "execute_result") else {}
    found = []
    if "image/svg+xml" in data:
        found.append(data["image/svg+xml"])
    html = data.get("text/html", "")
    found += [base64.b64decode(b).decode("utf-8") for b in
              re.findall(r"data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)", html)]
    found += re.findall(r"<svg\b.*?</svg>", html, re.S)
    return found


def unreadable(nb) -> list:
    """['cell 12: 5.4 px text (an SVG 1,917 px wide, shown 860 px wide)', ...]"""
    out = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        for output in cell.outputs:
            for svg in dict.fromkeys(svgs_in(output)):     # the same picture as SVG and in HTML: once
                px, shown = svg_text_px(svg)
                if px is not None and px < MIN_TEXT_PX - 1e-6:
                    head = cell.source.strip().splitlines()[0][:60] if cell.source.strip() else ""
                    out.append(f"cell {i} ({head!r}): text {px:.1f} px tall at {shown:.0f} px wide")
    return out


def test_text_height_is_computed_from_width_and_font_size():
    wide = '<svg width="1720pt" height="10pt" viewBox="0.00 0.00 1720.00 10.00"><text font-size="9.00">x</text></svg>'
    assert svg_text_px(wide) == pytest.approx((9 * 860 / 1720, 860))     # 4.5 px: unreadable
    narrow = '<svg width="300pt" height="10pt" viewBox="0 0 300 10"><text font-size="9.00">x</text></svg>'
    assert svg_text_px(narrow) == pytest.approx((12.0, 400))             # shown at natural size
    scaled = ('<svg width="300pt" height="10pt" viewBox="0 0 600 20"><g transform="scale(0.5 0.5)">'
              '<text font-size="20.00">x</text></g></svg>')
    assert svg_text_px(scaled)[0] == pytest.approx(20 * 0.5 * 400 / 600)
    assert svg_text_px('<svg width="10pt" viewBox="0 0 10 10"></svg>') == (None, pytest.approx(40 / 3))


def test_a_too_wide_picture_names_its_cell():
    nb = nbformat.v4.new_notebook()
    svg = '<svg width="1800pt" height="10pt" viewBox="0 0 1800 10"><text font-size="9.00">x</text></svg>'
    nb.cells = [nbformat.v4.new_markdown_cell("# t"),
                nbformat.v4.new_code_cell("w", outputs=[nbformat.v4.new_output(
                    "display_data", data={"image/svg+xml": svg, "text/plain": "w"})])]
    assert unreadable(nb) == ["cell 1 ('w'): text 4.3 px tall at 860 px wide"]
    b64 = base64.b64encode(svg.encode()).decode()
    nb.cells[1].outputs[0]["data"] = {"text/html": f'<img src="data:image/svg+xml;base64,{b64}">'}
    assert len(unreadable(nb)) == 1


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_every_committed_picture_is_readable_at_notebook_width(path):
    nb = nbformat.read(path, as_version=4)
    bad = unreadable(nb)
    assert not bad, (f"{path.name}: pictures whose smallest text is under {MIN_TEXT_PX:g} px at "
                     f"{OUTPUT_WIDTH_PX} px output width:\n  " + "\n  ".join(bad))


# ---- core paths (issue 20 §4): 11 px and 900 px, read with the engine's one readability rule ----
from backward_twice.picture.layout import CORE_MAX_HEIGHT_PX, CORE_TEXT_PX, reads_at, shown_px, smallest_text_px  # noqa: E402
from scripts import lengths, skeleton  # noqa: E402


def core_picture_problems(nb) -> list:
    """['cell 9 (...): text 9.6 px (core paths: >= 11 px)', 'cell 13 (...): 1,636 px tall (...)'] for
    the pictures of core-path cells: not under a Going deeper heading (scripts/skeleton.py), source not
    hidden. A folded pair or a hidden cell's output may keep the 9 px rule above."""
    sk = skeleton.classify(nb)
    out = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code" or not sk.core(i) or lengths.is_hidden(cell):
            continue
        head = cell.source.strip().splitlines()[0][:60] if cell.source.strip() else ""
        for output in cell.outputs:
            for svg in dict.fromkeys(svgs_in(output)):
                if not reads_at(svg, CORE_TEXT_PX):
                    out.append(f"cell {i} ({head!r}): text {smallest_text_px(svg):.1f} px "
                               f"(core paths: >= {CORE_TEXT_PX:g} px at {OUTPUT_WIDTH_PX} px)")
                height = shown_px(svg)[1]
                if height > CORE_MAX_HEIGHT_PX:
                    out.append(f"cell {i} ({head!r}): {height:,.0f} px tall "
                               f"(core paths: <= {CORE_MAX_HEIGHT_PX} px at {OUTPUT_WIDTH_PX} px)")
    return out


def _picture_cell(svg, hidden=False):
    cell = nbformat.v4.new_code_cell("w", outputs=[nbformat.v4.new_output(
        "display_data", data={"image/svg+xml": svg, "text/plain": "w"})])
    if hidden:
        cell.metadata["jupyter"] = {"source_hidden": True}
    return cell


def test_core_rule_checks_text_and_height_and_skips_folded_cells():
    small = '<svg width="1100pt" height="300pt" viewBox="0 0 1100 300"><text font-size="10.00">x</text></svg>'
    tall = '<svg width="600pt" height="800pt" viewBox="0 0 600 800"><text font-size="10.00">x</text></svg>'
    fine = '<svg width="600pt" height="600pt" viewBox="0 0 600 600"><text font-size="10.00">x</text></svg>'
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# t\n\n## 1. A section"),
                _picture_cell(small), _picture_cell(tall), _picture_cell(fine), _picture_cell(small, hidden=True),
                nbformat.v4.new_markdown_cell("#### Going deeper: the full pair"), _picture_cell(tall),
                nbformat.v4.new_markdown_cell("## 2. Back on the path"), _picture_cell(fine)]
    # 10 pt at 1,100 pt shown 860 px wide: 10 x 860 / 1100 = 7.8 px; 800 pt = 1,067 px tall
    assert core_picture_problems(nb) == [
        "cell 1 ('w'): text 7.8 px (core paths: >= 11 px at 860 px)",
        "cell 2 ('w'): 1,067 px tall (core paths: <= 900 px at 860 px)"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_core_path_pictures_read_at_11_px_and_fit_900_px(path):
    nb = nbformat.read(path, as_version=4)
    bad = core_picture_problems(nb)
    assert not bad, f"{path.name}: core-path pictures that break issue 20 §4:\n  " + "\n  ".join(bad)


def _svg(width_pt, height_pt, font=10.0, box=True):
    view = f' viewBox="0.00 0.00 {width_pt:.2f} {height_pt:.2f}"' if box else ""
    return (f'<?xml version="1.0"?>\n<svg width="{width_pt:.0f}pt" height="{height_pt:.0f}pt"{view}\n'
            f' xmlns="http://www.w3.org/2000/svg"><text font-size="{font:.2f}">a</text></svg>\n')


@pytest.mark.parametrize("width_pt,height_pt,shown", [
    (600, 500, "as drawn"),          # 667 px tall, 13.3 px text: fits as drawn
    (600, 780, "smaller"),           # 1,040 px tall: shown at 86%, its text 11.5 px
    (650, 750, "smaller"),           # 867 px wide: shown 860 wide it is 992 px tall; at 900, text 12 px
    (600, 1200, "never"),            # 1,600 px tall: at 900 px its text would be 7.5 px
    (1200, 600, "never"),            # 1,600 px wide: its text is 7.2 px at 860 px already
])
def test_a_picture_too_tall_with_text_to_spare_is_shown_smaller_than_drawn(width_pt, height_pt, shown):
    """The rule (layout.fits: text >= 11 px and <= 900 px tall at 860 px) holds for the picture as
    shown: one whose text is larger than 11 px may be shown smaller than drawn (at_shown_size writes
    the size it is shown at; its viewBox keeps the drawing), never smaller than 11 px text."""
    from backward_twice.picture.layout import at_shown_size, fits, shown_px, smallest_text_px, svg_size

    svg = _svg(width_pt, height_pt)
    out = at_shown_size(svg)
    assert fits(svg) == (shown != "never") == fits(out)
    if shown == "as drawn" or shown == "never":
        assert out == svg
        return
    assert svg_size(out)[0] < min(width_pt, 645)             # shown narrower than drawn
    assert shown_px(out)[1] <= 900 and 11 <= smallest_text_px(out) < smallest_text_px(svg)
    assert 'viewBox="0.00 0.00' in out and f"{width_pt:.2f} {height_pt:.2f}" in out
    assert at_shown_size(_svg(width_pt, height_pt, box=False)).count("viewBox") == 1
