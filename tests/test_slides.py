"""Presenter mode (scripts/slides.py): slide metadata from the skeleton, in sync in every notebook,
and the slides themselves in headless Chromium, offline (reveal.js from its npm package).

The browser test opens notebook 01's slides with every request outside file:// refused, checks the
number of slides against the metadata, goes to the slide of the first before/after picture and
checks the picture is drawn there. Screenshot: build/artifacts/slides.png.
"""

import nbformat

from scripts import BUILD, nav, skeleton, slides

ARTIFACTS = BUILD / "artifacts"

SHOWN = nav.NB_DIR / "01_shared_graph_retain_graph.ipynb"


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


def test_slides_in_chromium(browser, tmp_path):
    (page_file,) = slides.build(tmp_path, only={SHOWN.name})
    nb = nbformat.read(SHOWN, as_version=4)
    types = slides.slide_types(nb)
    sk = skeleton.classify(nb)
    picture = next(i for i, c in enumerate(nb.cells) if c.cell_type == "code" and "watch(" in c.source
                   and types[i] == "-")
    h = sum(t == "slide" for t in types[:picture + 1]) - 1            # the slide that cell is on
    v = 0
    for t in reversed(types[:picture + 1]):                          # sub-slides since that slide
        if t == "slide":
            break
        v += t == "subslide"
    assert sk.core(picture)

    page = browser.new_page(viewport={"width": 1280, "height": 800})
    offsite, errors = [], []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.route("**/*", lambda r: r.continue_() if r.request.url.startswith(("file://", "data:"))
               else (offsite.append(r.request.url), r.abort()))
    page.goto(page_file.as_uri(), wait_until="load")
    page.wait_for_function("() => window.Reveal && Reveal.isReady()", timeout=30_000)
    counts = page.evaluate("() => ({total: Reveal.getTotalSlides(), across: Reveal.getHorizontalSlides().length})")
    assert counts == {"total": sum(t in ("slide", "subslide") for t in types), "across": types.count("slide")}
    page.evaluate(f"() => Reveal.slide({h}, {v})")
    page.wait_for_timeout(300)
    shown = page.evaluate("""() => {
      const s = Reveal.getCurrentSlide();
      const pics = [...s.querySelectorAll('.jp-OutputArea-output img, .jp-OutputArea-output svg')]
        .filter(e => !e.closest('svg svg') && e.getBoundingClientRect().width > 300)
        .filter(e => e.tagName !== 'IMG' || e.naturalWidth > 0);
      return {title: (s.querySelector('h1, h2, h3') || {}).textContent || '', pictures: pics.length,
              text: pics.map(p => p.getAttribute('alt') || p.textContent || '').join(' ').slice(0, 300)};
    }""")
    heading = skeleton.last_heading(nb.cells[sk.section[picture]])[1]
    assert shown["pictures"] >= 1, shown
    assert shown["title"].replace("`", "").strip().startswith(heading.replace("`", "").split()[0]), (shown, heading)
    assert "backward" in shown["text"], shown                          # the before/after picture of a backward call
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "slides.png"))
    assert offsite == [] and errors == [], (offsite, errors)
    page.close()
