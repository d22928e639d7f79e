"""Slides for a room (scripts/slides.py): the notebooks' slide metadata in sync, how a deck is cut
(headings, graphs, errors), and the decks of notebooks 01 and 10 measured in headless Chromium at
1280x720, slide by slide, with every request outside file:// refused:
- no slide taller than the screen, nothing wider; no code line cut off;
- body text >= 28 px, code >= 24 px, every graph's smallest text >= 14 px (on screen, as drawn);
- each live error: its code and a "predict" question on the slide, the error hidden until the
  next click; speaker notes on every slide.
Screenshots of four slides: build/artifacts/slides-*.png.
"""
import html
import re

import nbformat
import pytest

from scripts import BUILD, lengths, nav, skeleton, slides, teachers_guide

ARTIFACTS = BUILD / "artifacts"
MEASURED = ["01_shared_graph_retain_graph.ipynb", "10_graphs_across_steps.ipynb"]
SCREEN_W, SCREEN_H = 1280, 720
MIN_BODY_PX, MIN_CODE_PX, MIN_GRAPH_PX = 28, 24, 14


def test_slide_types_follow_the_skeleton():
    md, code = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell
    nb = nbformat.v4.new_notebook(cells=[
        md("# 99 · T"), code("from helpers.notebook import setup"), md("## 1. A"), code("with watch(y) as w: ..."),
        code("assert True", metadata={"jupyter": {"source_hidden": True}}), md("### 1.1 B"), code("x = 1"),
        md("### Going deeper: C"), code("z = 3"), md("## Summary\n- s\n\n## Solutions"), code('check("9.1", 3, 3, hint="")'),
        md(nav.NAV_MARK)])
    assert slides.slide_types(nb) == ["slide", "skip", "slide", "-", "skip", "subslide", "-", "skip", "skip",
                                      "slide", "skip", "skip"]


def test_slide_metadata_is_in_sync():
    stale = [p.name for p in nav.notebooks() if slides.out_of_date(nbformat.read(p, as_version=4))]
    assert stale == [], f"slide metadata out of date in {stale}: run python scripts/slides.py --write"


def test_a_heading_mid_cell_starts_a_slide_and_folded_parts_stay_out():
    md, code = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell
    nb = nbformat.v4.new_notebook(cells=[
        md("# 99 · T"), md("## 1. A\ntext a\n\n## 2. B\ntext b\n### 2.1 C\ntext c"),
        code("y = 1"), md("## Summary\n- s\n\n## Solutions\nhidden answers"), code('check("9.1", 3, 3, hint="")')])
    titles = [re.sub(r"<[^>]+>", "", s.title) for s in slides.deck(nb)]
    assert titles == ["99 · T", "1. A", "2. B", "2.1 C", "Summary"], titles


def test_every_core_heading_of_every_notebook_starts_a_slide():
    for path in nav.notebooks():
        nb = nbformat.read(path, as_version=4)
        sk = skeleton.classify(nb)
        types = slides.slide_types(nb)
        want = []
        for i, (cell, pieces) in enumerate(lengths.sections(nb)):
            if cell.cell_type == "markdown" and types[i] != "skip":
                text = "\n".join(p.text for p in pieces if p.part == "core")
                want += [m.group(2) for line in text.splitlines() for m in [lengths.HEADING.match(line)] if m]
        assert sk.kind.count("title") == 1
        starts = [s for s in slides.deck(nb) if "(continued)" not in s.title]
        got = [html.unescape(re.sub(r"<[^>]+>", "", s.title)) for s in starts]
        def letters(t):        # the heading's words, whatever markup or MathML drew them
            return re.sub(r"[^0-9A-Za-z]", "", t)
        assert [letters(w) for w in want] == [letters(g) for g in got], path.name


def _pair_svg(width_pt=892, height_pt=512):
    """A Graphviz-like SVG: two clusters side by side, each with two nodes, and a legend below."""
    def node(x, y, label):
        return (f'<g class="node"><polygon points="{x},{y} {x + 150},{y} {x + 150},{y - 40} {x},{y - 40} {x},{y}"/>'
                f'<text x="{x + 75}" y="{y - 15}" text-anchor="middle" font-size="14.00">{label}</text></g>')
    half = width_pt / 2
    return (f'<svg width="{width_pt}pt" height="{height_pt}pt" viewBox="0.00 0.00 {width_pt}.00 {height_pt}.00" '
            f'xmlns="http://www.w3.org/2000/svg">'
            f'<g id="graph0" class="graph" transform="scale(1 1) rotate(0) translate(4 {height_pt - 4})">'
            f'<polygon fill="white" stroke="none" points="-4,4 -4,-{height_pt} {width_pt},-{height_pt} {width_pt},4 -4,4"/>'
            f'<g class="cluster"><path d="M10,-100 C10,-100 {half - 10},-100 {half - 10},-{height_pt - 10}"/>'
            f'<text x="20" y="-{height_pt - 25}" font-size="14.00">before</text></g>'
            f'<g class="cluster"><path d="M{half + 10},-100 C{half},-100 {width_pt - 10},-100 '
            f'{width_pt - 10},-{height_pt - 10}"/>'
            f'<text x="{half + 20}" y="-{height_pt - 25}" font-size="14.00">after</text></g>'
            + node(60, -300, "a") + node(60, -150, "b") + node(half + 60, -300, "a") + node(half + 60, -150, "b")
            + '<text x="15" y="-40" font-size="10.00">legend: leaf tensor</text></g></svg>')


def _part_view(svg):
    return [float(v) for v in re.search(r'viewBox="([^"]*)"', svg).group(1).split()]


def test_a_wide_pair_is_shown_before_then_after_with_its_smallest_text_at_14_px():
    parts = slides.graph_parts(_pair_svg(), width=1232, height=652)
    views = [_part_view(p) for p, _, _ in parts]
    assert len(parts) == 3, views                                   # before, after, the legend last
    assert views[0][0] == 0 and 440 <= views[0][2] == views[1][0] <= 450, views   # in the gap between the clusters
    assert views[2][1] > 400, views                                 # the legend's own part
    for part, w, h in parts:
        assert w <= 1232 and h <= 652
        assert 14 <= 10 * w / _part_view(part)[2] < 15                   # 10-unit text drawn at 14.5 px
    small = slides.graph_parts(_pair_svg(400, 300), width=1232, height=652)
    assert len(small) == 1 and small[0][0].count("viewBox") == 1        # fits: one part


def test_a_tall_graph_is_cut_between_rows_of_nodes():
    svg = _pair_svg(300, 1400)
    parts = slides.graph_parts(svg, width=1232, height=652)
    assert len(parts) >= 2
    _, _, boxes = slides._svg_geometry(svg)
    for part, _, h in parts:
        x, y, w, hh = _part_view(part)
        assert h <= 652
        for kind, _, y0, _, y1 in boxes:               # no node is cut through
            if kind == "node":
                assert y1 <= y or y0 >= y + hh or (y <= y0 and y1 <= y + hh), (kind, y0, y1, y, hh)


def test_notes_come_from_the_teachers_guide():
    path = nav.NB_DIR / MEASURED[0]
    deck = slides.deck(nbformat.read(path, as_version=4), teachers_guide.notes(path))
    rows = teachers_guide.plan_rows(path, teachers_guide.load_plans()[path.name[:2]])[0]
    says = {r.say for r in rows}
    section_two = [s for s in deck if s.key == "2"]
    assert section_two and all(any(say in s.notes for say in says) or "Predict this" in s.notes for s in section_two)
    assert all(s.notes for s in deck)
    why = teachers_guide.load_plans()["01"]["predict"]["2"]             # the plan's why, after the prediction
    assert any("Predict this" in s.notes and why in s.notes for s in section_two)


MEASURE_JS = r"""() => {
  const out = [];
  const scale = Reveal.getScale();
  const slides = Reveal.getSlides();
  const px = (e) => parseFloat(getComputedStyle(e).fontSize) * scale;
  const decode = (src) => {
    const m = src.match(/^data:image\/svg\+xml(;base64)?,(.*)$/s);
    if (!m) return null;
    return m[1] ? atob(m[2]) : decodeURIComponent(m[2]);
  };
  slides.forEach((s, i) => {
    Reveal.slide(i);
    const frags = [...s.querySelectorAll('.fragment')];
    const last = frags.length ? Math.max(...frags.map(f => +f.getAttribute('data-fragment-index'))) : -1;
    Reveal.navigateFragment(-1);
    const errors = [...s.querySelectorAll('.bt-error')];
    const hidden = (e) => getComputedStyle(e).opacity === '0' || getComputedStyle(e).visibility === 'hidden';
    const errorHiddenFirst = errors.every(hidden);
    const texts = [...s.querySelectorAll('p, li, td, th')]
      .filter(e => !e.closest('pre, aside') && e.textContent.trim());
    const codes = [...s.querySelectorAll('pre code, code')].filter(e => !e.closest('aside') && e.textContent.trim());
    const cut = [...s.querySelectorAll('pre code')]
      .filter(e => e.scrollWidth > e.clientWidth + 1 || e.getBoundingClientRect().right > 1280 * scale + 1);
    const graphs = [...s.querySelectorAll('img.bt-graph')].map(img => {
      const svg = decode(img.getAttribute('src'));
      const doc = new DOMParser().parseFromString(svg, 'image/svg+xml').documentElement;
      const vb = doc.getAttribute('viewBox').split(/[\s,]+/).map(Number);
      const g = doc.querySelector('g');
      const sm = (g && g.getAttribute('transform') || '').match(/scale\(([\d.]+)/);
      const sizes = [...doc.querySelectorAll('[font-size]')].map(e => parseFloat(e.getAttribute('font-size')));
      const r = img.getBoundingClientRect();
      return {smallest: sizes.length ? Math.min(...sizes) * (sm ? parseFloat(sm[1]) : 1) * r.width / vb[2] : null,
              width: r.width, height: r.height, bottom: r.bottom, right: r.right};
    });
    // every fragment shown: the tallest state of the slide
    Reveal.slide(i, 0, last);
    const errorShownLast = errors.every(e => getComputedStyle(e).opacity !== '0');
    const withCode = errors.every(e => s.querySelector('pre.bt-code') && s.querySelector('.bt-predict'));
    const notes = (s.querySelector('aside.notes') || {}).textContent || '';
    out.push({index: i, title: (s.querySelector('h1, h2') || {}).textContent || '',
              height: s.scrollHeight, overflowX: s.scrollWidth > s.clientWidth + 1,
              minText: texts.length ? Math.min(...texts.map(px)) : null,
              minCode: codes.length ? Math.min(...codes.map(px)) : null,
              cut: cut.length, graphs, errors: errors.length, errorHiddenFirst, errorShownLast, withCode,
              notes: notes.trim().length, fragments: frags.length, lastFragment: last});
  });
  Reveal.slide(0);
  return out;
}"""


@pytest.fixture(scope="module")
def decks(tmp_path_factory):
    out = tmp_path_factory.mktemp("slides")
    return {p.name: p for p in slides.build(out, only=set(MEASURED))}


@pytest.mark.parametrize("name", MEASURED)
def test_slides_fit_a_room_in_chromium(browser, decks, name):
    page_file = decks[name.replace(".ipynb", ".slides.html")]
    page = browser.new_page(viewport={"width": SCREEN_W, "height": SCREEN_H})
    offsite, errors = [], []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.route("**/*", lambda r: r.continue_() if r.request.url.startswith(("file://", "data:"))
               else (offsite.append(r.request.url), r.abort()))
    page.goto(page_file.as_uri(), wait_until="load")
    page.wait_for_function("() => window.Reveal && Reveal.isReady()", timeout=30_000)
    assert page.evaluate("Reveal.getScale()") == 1
    measured = page.evaluate(MEASURE_JS)
    nb = nbformat.read(nav.NB_DIR / name, as_version=4)
    assert len(measured) == len(slides.deck(nb))
    problems = []
    for s in measured:
        where = f"slide {s['index']} ({' '.join(s['title'].split())[:60]})"
        if s["height"] > SCREEN_H or s["overflowX"]:
            problems.append(f"{where}: {s['height']} px tall or wider than the screen")
        if s["minText"] is not None and s["minText"] < MIN_BODY_PX:
            problems.append(f"{where}: body text {s['minText']} px")
        if s["minCode"] is not None and s["minCode"] < MIN_CODE_PX:
            problems.append(f"{where}: code {s['minCode']} px")
        if s["cut"]:
            problems.append(f"{where}: {s['cut']} code block(s) cut off")
        for g in s["graphs"]:
            if g["smallest"] is None or g["smallest"] < MIN_GRAPH_PX:
                problems.append(f"{where}: graph text {g['smallest']} px")
            if g["bottom"] > SCREEN_H or g["right"] > SCREEN_W:
                problems.append(f"{where}: a graph ends at ({g['right']:.0f}, {g['bottom']:.0f})")
        if s["errors"] and not (s["errorHiddenFirst"] and s["errorShownLast"] and s["withCode"]):
            problems.append(f"{where}: the error is not on the next click after its code and question")
        if not s["notes"]:
            problems.append(f"{where}: no speaker notes")
    assert problems == [], problems
    # what was measured is there: every picture of the slides' cells (one part or more each), live errors, code, text
    shown = slides.slide_types(nb)
    pictures = sum(1 for i, c in enumerate(nb.cells) if shown[i] != "skip" for o in c.get("outputs", [])
                   if "text/vnd.graphviz" in o.get("data", {}))    # every picture output carries its DOT
    assert sum(len(s["graphs"]) for s in measured) >= pictures > 0
    live = sum(o.get("output_type") == "error" for i, c in enumerate(nb.cells) if slides.slide_types(nb)[i] != "skip"
               for o in c.get("outputs", []))
    assert sum(s["errors"] for s in measured) == live > 0
    assert all(any(s[k] is not None for s in measured) for k in ("minText", "minCode"))

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with_graph = next((s for s in measured if len(s["graphs"]) > 1), None) or next(s for s in measured if s["graphs"])
    shots = [next(s for s in measured if s["errors"]), with_graph]
    for s in shots:
        page.evaluate(f"() => Reveal.slide({s['index']}, 0, -1)")
        page.screenshot(path=str(ARTIFACTS / f"slides-{name[:2]}-{s['index']}-before.png"))
        page.evaluate(f"() => Reveal.slide({s['index']}, 0, 0)")
        page.screenshot(path=str(ARTIFACTS / f"slides-{name[:2]}-{s['index']}-after-click.png"))
    assert offsite == [] and errors == [], (offsite, errors)
    page.close()


def test_a_stacked_pair_of_drawings_is_cut_between_and_inside_them():
    """A picture made of two <svg> drawings stacked (before above, after below): parts at 14+ px."""
    inner = [re.sub(r'^<svg width="[^"]*" height="[^"]*"', f'<svg x="0" y="{y}" width="400" height="600"', _pair_svg(400, 600))
             for y in (0, 620)]
    svg = ('<svg width="400pt" height="1220pt" viewBox="0.00 0.00 400.00 1220.00" xmlns="http://www.w3.org/2000/svg">'
           + "".join(inner) + "</svg>")
    view, smallest, boxes = slides._svg_geometry(svg)
    assert smallest == 10 and sum(b[0] == "node" for b in boxes) == 8
    assert max(b[4] for b in boxes if b[0] == "node") > 620              # the lower drawing's nodes, moved down
    parts = slides.graph_parts(svg, width=1232, height=652)
    assert len(parts) >= 2
    for part, w, h in parts:
        assert h <= 652 and 14 <= 10 * w / _part_view(part)[2]


# ---------------------------------------------------------------- accessibility (issue 30 §4)
AXE_JS = """async ([tags, rules]) => {
  const out = [], n = Reveal.getTotalSlides();
  for (let i = 0; i < n; i++) {
    Reveal.slide(i, 0, 99);                       // the slide with every fragment shown
    const here = i === 0 ? document : document.querySelector('.reveal .slides > section.present');
    for (const only of [{type: 'tag', values: tags}, {type: 'rule', values: rules}]) {
      const r = await axe.run(here, {runOnly: only});
      for (const v of r.violations) for (const nd of v.nodes)
        out.push('slide ' + i + ': ' + v.id + ': ' + nd.target.join(' ') + ': '
                 + ((nd.any[0] || nd.all[0] || nd.none[0] || {}).message || v.help));
    }
  }
  return [n, out]; }"""


def deck_violations(browser, deck, axe_js, style=None):
    """(slides checked, axe violations) of a deck, slide by slide (a hidden slide is not checked by
    axe, so each is shown in turn, every fragment visible): the WCAG 2.1 A and AA rules, plus
    heading-order and landmark-unique."""
    page = browser.new_page(viewport={"width": SCREEN_W, "height": SCREEN_H})
    page.goto(deck.as_uri(), wait_until="load")
    page.wait_for_function("() => window.Reveal && Reveal.isReady()", timeout=30_000)
    if style:
        page.add_style_tag(content=style)
    page.add_script_tag(content=axe_js)
    from scripts.build_site import AXE_RULES, AXE_TAGS

    n, found = page.evaluate(AXE_JS, [AXE_TAGS, AXE_RULES])
    page.close()
    return n, found


def test_every_slide_of_every_deck_passes_axe(browser, tmp_path):
    from scripts.build_site import install_axe

    axe_js = install_axe().read_text()
    decks = slides.build(tmp_path)
    assert len(decks) == len(nav.notebooks())
    # the check sees every slide, not only the first: grey text on slide 5 of one deck is found there
    n, found = deck_violations(browser, decks[1], axe_js, ".reveal .slides > section:nth-child(6) * { color: #ccc !important }")
    assert any(v.startswith("slide 5: color-contrast") for v in found), found[:3]
    problems, slides_checked = [], 0
    for deck in decks:
        n, found = deck_violations(browser, deck, axe_js)
        slides_checked += n
        problems += [f"{deck.name} {v}" for v in found]
    assert slides_checked > 10 * len(decks)
    assert not problems, f"{len(problems)} axe violation(s):\n" + "\n".join(problems[:40])


def test_each_deck_is_titled_by_its_notebook_and_charts_say_what_they_show(tmp_path):
    for deck in slides.build(tmp_path):
        page = deck.read_text()
        nb = nbformat.read(nav.NB_DIR / deck.name.replace(".slides.html", ".ipynb"), as_version=4)
        assert f"<title>{html.escape(nav.title_of(nb))}: slides</title>" in page, deck.name
        alts = re.findall(r'<img class="bt-chart" src="[^"]*" alt="([^"]*)"', page)
        assert all(len(a) > 20 and a != "chart" for a in alts), (deck.name, alts)
