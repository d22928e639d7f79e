"""The printable handout (scripts/handout.py, a page of the static site) and the print stylesheet.

The browser test prints the handout to PDF with headless Chromium (Playwright's page.pdf, the
same print path as `chromium --headless --print-to-pdf`), reads the PDF with pypdf, and checks
that the cheat sheet's whole table is on page 1, that no navigation chrome is printed, and how
many pages it takes. It also lays out a notebook page for print and checks that every picture
fits the page width. The PDF is saved to build/artifacts/handout.pdf (`pdftoppm -png` to look).
"""
import io
import math

import nbformat
import pytest

from scripts import BUILD, build_site, handout, lengths, nav
from tests.test_cheat_sheet import TOOLS  # the cheat sheet's rows: one list for both tests

ARTIFACTS = BUILD / "artifacts"

LOADED = [nav.info(p) for p in nav.notebooks()]
SHEET = next(it["file"] for _, it in LOADED if it["file"].endswith("_cheat_sheet.ipynb"))
# a notebook page with wide pictures: the one with the most graph/chart outputs
PICTURES = max(LOADED, key=lambda pair: sum(("image/svg+xml" in o.get("data", {}) or "image/png" in o.get("data", {}))
                                         for c in pair[0].cells for o in c.get("outputs", [])))[1]["file"]
A4_CONTENT_PX = round((210 - 24) / 25.4 * 96)        # A4 width less the 12 mm margins, in CSS px


def summaries():
    return [it["title"] for nb, it in LOADED
            if lengths.section_text(handout.notebook_markdown(nb), "Summary") and it["file"] != SHEET]


def notebook_pictures(path) -> int:
    """Pictures in a notebook's outputs: a graph is an <img> in text/html, a chart an image/png (or svg)."""
    nb = nbformat.read(path, as_version=4)
    return sum(o.get("data", {}).get("text/html", "").count("<img")
               + ("image/png" in o.get("data", {})) + ("image/svg+xml" in o.get("data", {}))
               for cell in nb.cells if cell.cell_type == "code" for o in cell.get("outputs", []))


def test_handout_has_the_table_and_every_summary():
    text = handout.handout_markdown(LOADED)
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    assert len(rows) == len(TOOLS) and all(any(t in r for r in rows) for t in TOOLS)
    for title in summaries():
        assert f"[{title}]" in text, title
    assert len(summaries()) >= len(LOADED) - 2


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("site")
    build_site.build(out, only={SHEET, PICTURES})
    assert (out / "handout.html").is_file()
    return out


def test_handout_page_links_resolve(site):
    """Notebook links become page links (the built pages exist; the others are built by test_site)."""
    import re

    text = (site / "handout.html").read_text()
    targets = set(re.findall(r'href="([^"#]+)', text))
    pages = {build_site.page_name(it["file"]) for _, it in LOADED}
    assert build_site.page_name(SHEET) in targets and targets <= pages | {"index.html"}


def test_handout_prints_to_pdf(site, browser):
    import pypdf

    page = browser.new_page()
    page.goto((site / "handout.html").as_uri(), wait_until="load")
    pdf = page.pdf(format="A4", prefer_css_page_size=True)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / "handout.pdf").write_bytes(pdf)
    reader = pypdf.PdfReader(io.BytesIO(pdf))
    first = reader.pages[0].extract_text()
    whole = "\n".join(p.extract_text() for p in reader.pages)
    for word in ("Tool", "Keeps / frees", "Use it when", "Usual mistake", "Proved in") + TOOLS:
        assert word in first.replace("\n", ""), f"{word!r} is not on the first printed page"
    assert "Contents" not in whole and "←" not in whole, "navigation chrome printed"
    for title in summaries():
        assert title.split(" · ")[1][:20] in whole.replace("\n", " "), title
    # one page for the cheat sheet, then the summaries: about two notebooks a page
    n = len(reader.pages)
    print(f"handout: {n} A4 pages ({ARTIFACTS / 'handout.pdf'})")
    assert 2 <= n <= 1 + math.ceil(len(summaries()) / 2), n
    page.close()


def test_a_notebook_page_prints_with_pictures_within_the_page(site, browser):
    page = browser.new_page(viewport={"width": A4_CONTENT_PX, "height": 1000})
    page.emulate_media(media="print")
    page.goto((site / build_site.page_name(PICTURES)).as_uri(), wait_until="load")
    info = page.evaluate("""() => {
      document.querySelectorAll('details.bt-deeper').forEach(d => { d.open = true; });  // as a reader opens them
      const shown = el => el.getClientRects().length > 0 && getComputedStyle(el).display !== 'none';
      const pics = [...document.querySelectorAll('.jp-OutputArea-output img, .jp-OutputArea-output svg')]
                   .filter(e => shown(e) && !e.closest('svg svg'));
      return {pictures: pics.length, width: document.documentElement.clientWidth,
              wide: pics.map(e => e.getBoundingClientRect()).filter(r => r.right > document.documentElement.clientWidth + 1)
                        .map(r => Math.round(r.width)),
              nav: [...document.querySelectorAll('.bt-nav')].filter(shown).length,
              folded: [...document.querySelectorAll('details.bt-hidden-source')].filter(shown).length};
    }""")
    assert info["pictures"] >= 3, info
    assert info["pictures"] == notebook_pictures(nav.NB_DIR / PICTURES), (
        f"{PICTURES}: {info['pictures']} pictures on the page, {notebook_pictures(nav.NB_DIR / PICTURES)} "
        "in the notebook's outputs")
    assert info["wide"] == [], f"{PICTURES}: pictures wider than the printed page ({info['width']} px): {info['wide']}"
    assert info["nav"] == 0 and info["folded"] == 0, info
    page.close()
