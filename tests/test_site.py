"""The static site (scripts/build_site.py): built from the committed notebooks, read offline.

The first tests read the HTML files; the browser test opens every page in headless Chromium
(no network: any request that is not a local file fails the test) and checks that pages load
with no console error, every picture is visible, every link and anchor resolves.
A screenshot is saved to build/artifacts/site.png.
"""
import re
import subprocess
import sys
import time
import urllib.parse

import nbformat
import pytest

from scripts import BUILD, ROOT, notebooks
from scripts.build_site import AXE_RULES, AXE_TAGS

ARTIFACTS = BUILD / "artifacts"
NOTEBOOKS = notebooks()
STEPPER_STATIC = "bt-stepper-static"


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("site")
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "scripts/build_site.py", "--out", str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    print(f"site built in {time.perf_counter() - start:.1f} s")
    return out


def page_of(nb_path) -> str:
    return nb_path.stem + ".html"


def expected_pictures(nb) -> int:
    """Graph/chart outputs the page must show: PNG charts, and every SVG, as raw image/svg+xml
    or as an <img> in text/html (a graph, or each frame of a stepper)."""
    n = 0
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            if "image/png" in data:
                n += 1
            elif "data:image/svg+xml" in data.get("text/html", ""):
                n += data["text/html"].count("data:image/svg+xml")
            elif "image/svg+xml" in data:
                n += 1
    return n


def test_every_notebook_has_a_page_in_order(site):
    index = (site / "index.html").read_text()
    links = re.findall(r'href="([0-9][0-9]_[^"#]+\.html)"', index)
    assert links == [page_of(p) for p in NOTEBOOKS]
    for p in NOTEBOOKS:
        assert (site / page_of(p)).is_file()


def test_pages_need_no_network_and_keep_solutions_folded(site):
    for page in sorted(site.glob("*.html")):
        text = page.read_text()
        scripts = re.findall(r'<script src="([^"]*)"', text)                     # require.js, MathJax ...: none
        assert scripts == [f"search/{f}" for f in ("lunr.min.js", "index.js", "search.js")], (page.name, scripts)
        assert not re.search(r'<(?:script|link|img|iframe)\b[^>]*\b(?:src|href)="(?:https?:)?//', text), page.name
        assert "mathjax" not in text.lower(), page.name
    for nb_path in NOTEBOOKS:
        nb = nbformat.read(nb_path, as_version=4)
        text = (site / page_of(nb_path)).read_text()
        hidden = [c for c in nb.cells if c.cell_type == "code" and c.metadata.get("jupyter", {}).get("source_hidden")]
        assert text.count('<details class="bt-hidden-source">') == len(hidden), nb_path.name
        if "$" in "".join(c.source for c in nb.cells if c.cell_type == "markdown"):
            assert "<math" in text, f"{nb_path.name}: math not converted to MathML"


def going_deeper_headings(nb) -> list[str]:
    """The text of every Going deeper heading in the notebook's markdown (scripts/lengths.py's rule)."""
    from scripts import lengths

    return [p.heading for _, pieces in lengths.sections(nb) for p in pieces if p.opens == "deeper"]


def test_going_deeper_sections_and_check_cell_code_are_folded_outputs_are_not(site):
    sections = 0
    for nb_path in NOTEBOOKS:
        nb = nbformat.read(nb_path, as_version=4)
        text = (site / page_of(nb_path)).read_text()
        headings = going_deeper_headings(nb)
        summaries = re.findall(r'<details class="bt-deeper"><summary>(.*?)</summary>', text, re.S)
        assert len(summaries) == len(headings), f"{nb_path.name}: {len(summaries)} folded, {len(headings)} sections"
        for heading, summary in zip(headings, summaries):
            plain = re.sub(r"<[^>]+>", "", summary).replace("&#182;", "")
            assert re.sub(r"[`*]", "", heading) in plain.replace("&#39;", "'"), (nb_path.name, heading)
        assert text.count("<details") == text.count("</details>"), nb_path.name
        for code in re.findall(r'<details class="bt-hidden-source">(.*?)</details>', text, re.S):
            assert "jp-OutputArea" not in code, f"{nb_path.name}: an output folded with hidden code"
        sections += len(headings)
    assert sections > 0, "no notebook has a Going deeper section: nothing was checked"


def test_fold_going_deeper_on_a_built_notebook():
    from scripts import build_site  # here, not at the top: nbconvert's import is slow for every worker

    md, code = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell
    nb = nbformat.v4.new_notebook(cells=[
        md("## 1. Core\ntext"),
        md("### Going deeper: outer\nfolded text\n#### a sub-heading stays inside"),
        code("x = 1"),
        md("more\n### Going deeper: inner sibling\nnext section"),   # closes outer, opens another
        code("y = 2"),
        md("end of it\n## 2. Back\ncore again"),                      # a heading mid-cell closes it
        md("## Going deeper: last\nto the end"),
        code("z = 3"),
    ])
    assert build_site.fold_going_deeper(nb) == 3
    marks = [(c.source, c.metadata.get("bt_deeper"), c.metadata.get("bt_close_before", 0),
              c.metadata.get("bt_close_after", 0)) for c in nb.cells]
    assert marks == [
        ("## 1. Core\ntext", None, 0, 0),
        ("folded text\n#### a sub-heading stays inside", "### Going deeper: outer", 0, 0),
        ("x = 1", None, 0, 0),
        ("more", None, 0, 0),
        ("next section", "### Going deeper: inner sibling", 1, 0),
        ("y = 2", None, 0, 0),
        ("end of it", None, 0, 0),
        ("## 2. Back\ncore again", None, 1, 0),
        ("to the end", "## Going deeper: last", 0, 0),
        ("z = 3", None, 0, 1),
    ]
    body, _ = build_site.exporter().from_notebook_node(nb, resources={
        "metadata": {"name": "x"}, "bt_css": "", "bt_nav_top": "", "bt_nav_bottom": ""})
    assert body.count('<details class="bt-deeper">') == 3 and body.count("</details>") == 3
    assert re.search(r'<summary><div[^>]*><h3 id="Going-deeper:-outer">Going deeper: outer', body)


def test_pages_keep_alt_text_focus_and_highlighted_escaped_code(site):
    """build_site replaces nbconvert's bleach and BeautifulSoup passes; what they gave must stay."""
    from scripts import build_site  # here, not at the top: nbconvert's import is slow for every worker

    pictures = 0
    for nb_path in NOTEBOOKS:
        nb = nbformat.read(nb_path, as_version=4)
        text = (site / page_of(nb_path)).read_text()
        imgs = re.findall(r"<img\b[^>]*>", text)
        pictures += len(imgs)
        assert all(re.search(r'\balt="[^"]+"', i) for i in imgs), nb_path.name
        charts = [i for i in imgs if 'src="data:image/png' in i]       # matplotlib figures: described
        assert len(charts) == sum("image/png" in o.get("data", {}) for c in nb.cells for o in c.get("outputs", []))
        assert all(re.search(r'\balt="A (?:chart|figure of \d+ panels): [^"]{10,}"', i) for i in charts), nb_path.name
        code_cells = [c for c in nb.cells if c.cell_type == "code"]
        build_site.fold_going_deeper(nb)          # the page's cells: a markdown cell may be split
        assert text.count('class="jp-Cell-inputWrapper" tabindex="0"') == len(code_cells) + sum(
            c.cell_type != "code" for c in nb.cells), nb_path.name                 # every cell's input
        assert '<span class="kn">import</span>' in text, nb_path.name              # Pygments ran
    assert pictures > 50


def test_code_with_markup_in_it_is_shown_escaped_not_run():
    from scripts import build_site  # here, not at the top: nbconvert's import is slow for every worker

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell('label = "<script>alert(1)</script><b>"')])
    body, _ = build_site.exporter().from_notebook_node(nb, resources={"metadata": {"name": "t"}})
    assert "<script>alert(1)" not in body and "<b>" not in body
    assert "&lt;script&gt;alert(1)&lt;/script&gt;&lt;b&gt;" in body


def rel_links(text, rel) -> list:
    """hrefs of the <a rel=...> links of a page, whatever the attribute order."""
    from html.parser import HTMLParser

    found = []

    class Links(HTMLParser):
        def handle_starttag(self, tag, attrs):
            a = dict(attrs)
            if tag == "a" and a.get("rel") == rel:
                found.append(a.get("href"))

    Links().feed(text)
    return found


def test_navigation_bars_follow_the_notebook_order(site):
    pages = [page_of(p) for p in NOTEBOOKS]
    for i, name in enumerate(pages):
        text = (site / name).read_text()
        prev, nxt = rel_links(text, "prev"), rel_links(text, "next")
        assert prev == ([pages[i - 1]] * 2 if i > 0 else []), name       # top and bottom bars
        assert nxt == ([pages[i + 1]] * 2 if i + 1 < len(pages) else []), name


def test_committed_outputs_have_no_dead_widget_views():
    """scripts/regen.py drops widget views that have a static form (their state is not saved, so
    JupyterLab could only say 'model not found'); outputs saved from JupyterLab would keep them."""
    for nb_path in NOTEBOOKS:
        nb = nbformat.read(nb_path, as_version=4)
        for cell in nb.cells:
            for out in cell.get("outputs", []):
                data = out.get("data", {})
                assert not ("application/vnd.jupyter.widget-view+json" in data
                            and set(data) - {"application/vnd.jupyter.widget-view+json", "text/plain"}), (
                    f"{nb_path.name}: a widget view in the committed outputs: regenerate with scripts/regen.py")


def test_a_widget_without_saved_state_shows_its_static_frames(tmp_path):
    """A notebook saved from JupyterLab keeps widget views whose state is gone; the site shows
    the output's static form instead (nbconvert skips a view without state), with no widget script."""
    from scripts import build_site

    nb = nbformat.v4.new_notebook()
    out = nbformat.v4.new_output("display_data", data={
        "application/vnd.jupyter.widget-view+json": {"model_id": "0123abcd", "version_major": 2, "version_minor": 0},
        "text/html": f'<div class="{STEPPER_STATIC}"><p>frame 0</p></div>', "text/plain": "frames as text"})
    nb.cells = [nbformat.v4.new_code_cell("steps", outputs=[out], execution_count=1)]
    body, _ = build_site.exporter().from_notebook_node(nb, resources={
        "metadata": {"name": "x", "path": str(tmp_path)}, "bt_css": "", "bt_nav_top": "", "bt_nav_bottom": ""})
    assert f'<div class="{STEPPER_STATIC}"><p>frame 0</p></div>' in body
    assert "widget-view+json" not in body and "<script src=" not in body


# ------------------------------------------------------------------------------- browser
CHECK_PAGE = """() => {
  const visible = el => { const r = el.getBoundingClientRect(); return r.width > 20 && r.height > 20; };
  const folded = el => { const d = el.closest('details'); return d !== null && !d.open; };
  const imgs = [...document.querySelectorAll('img')].filter(i => !folded(i));
  const svgs = [...document.querySelectorAll('.jp-OutputArea-output svg')].filter(s => !folded(s));
  const bad = [];
  for (const i of imgs) if (!i.complete || i.naturalWidth === 0 || !visible(i)) bad.push('img ' + i.src.slice(0, 60));
  for (const s of svgs) if (!visible(s)) bad.push('svg ' + (s.textContent || '').slice(0, 60));
  const maths = [...document.querySelectorAll('math')].filter(m => !folded(m) && !visible(m) &&
                 m.getBoundingClientRect().width === 0);
  const all = document.querySelectorAll('img').length + document.querySelectorAll('.jp-OutputArea-output svg').length;
  return {pictures: all, bad: bad, hiddenMath: maths.length,
          openOnLoad: [...document.querySelectorAll('details')].filter(d => d.open).length,
          links: [...document.querySelectorAll('a[href]')].map(a => a.getAttribute('href')),
          ids: [...document.querySelectorAll('[id]')].map(e => e.id),
          names: [...document.querySelectorAll('a[name]')].map(e => e.getAttribute('name'))};
}"""


def test_site_in_chromium(site, browser):
    start = time.perf_counter()
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    problems, offsite = [], []
    page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))

    def only_local(route):
        if route.request.url.startswith(("file://", "data:")):
            route.continue_()
        else:
            offsite.append(route.request.url)
            route.abort()

    page.route("**/*", only_local)
    pages = {"index.html": None, **{page_of(p): p for p in NOTEBOOKS}}
    seen_ids, found_links = {}, []
    for name, nb_path in pages.items():
        page.goto((site / name).as_uri(), wait_until="load", timeout=30_000)
        info = page.evaluate(CHECK_PAGE)
        assert info["bad"] == [], f"{name}: pictures not visible: {info['bad'][:5]}"
        assert info["openOnLoad"] == 0, f"{name}: {info['openOnLoad']} folded section(s) open on load"
        if nb_path is not None:
            want = expected_pictures(nbformat.read(nb_path, as_version=4))
            assert info["pictures"] >= want, f"{name}: {info['pictures']} pictures shown, {want} in the notebook"
        seen_ids[name] = set(info["ids"]) | set(info["names"])
        found_links += [(name, href) for href in info["links"]]
    # a Going deeper section opens on a click on its heading
    with_deeper = [p for p in NOTEBOOKS if going_deeper_headings(nbformat.read(p, as_version=4))]
    if with_deeper:
        page.goto((site / page_of(with_deeper[0])).as_uri())
        section = page.locator("details.bt-deeper").first
        inside = section.locator(":scope > :not(summary)").first
        assert section.locator("summary").is_visible() and not inside.is_visible()
        section.locator("summary").click()
        assert inside.is_visible()

    assert problems == [], problems
    assert offsite == [], f"pages tried to reach the network: {offsite[:5]}"

    broken = []
    for name, href in found_links:
        if re.match(r"^(https?|mailto):", href):
            continue                      # external: no network here; shape only
        path, _, frag = href.partition("#")
        target = name if not path else urllib.parse.unquote(path)
        file = site / target
        if not file.is_file():
            broken.append(f"{name} -> {href}")
        elif frag and target in seen_ids and not {frag, urllib.parse.unquote(frag)} & seen_ids[target]:
            broken.append(f"{name} -> {href} (no such anchor)")
    assert broken == [], broken

    # prev/next work as a reader uses them, and a solution unfolds on click
    first = page_of(NOTEBOOKS[0])
    page.goto((site / "index.html").as_uri())
    page.click(f'a[href="{first}"]')
    assert page.url.endswith(first)
    if len(NOTEBOOKS) > 1:
        page.click('nav.bt-nav.top a[rel="next"]')
        assert page.url.endswith(page_of(NOTEBOOKS[1]))
        page.click('nav.bt-nav.top a[rel="prev"]')
        assert page.url.endswith(first)
    summary = page.locator("details.bt-hidden-source > summary").first
    if summary.count():
        code = page.locator("details.bt-hidden-source .jp-InputArea").first
        assert not code.is_visible()
        summary.click()
        assert code.is_visible()

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    stepper = page.locator(f".{STEPPER_STATIC}").first
    if stepper.count():       # the stepper's static frames, with the cell that made them
        stepper.evaluate("el => { el.scrollIntoView({block: 'start'}); window.scrollBy(0, -260); }")
    page.screenshot(path=str(ARTIFACTS / "site.png"))
    page.close()
    print(f"site checked in Chromium in {time.perf_counter() - start:.1f} s: {len(pages)} pages, "
          f"screenshot {ARTIFACTS / 'site.png'}")


def searchable_pages(site, word: str) -> set:
    """The pages whose indexed text (build_site.search_docs: visible text, no hidden code) has `word`."""
    from scripts import build_site

    return {d["page"] for page in sorted(site.glob("*.html")) for d in build_site.search_docs(page, site)
            if word.lower() in (d["title"] + " " + d["section"] + " " + d["text"]).lower()}


def test_search_in_chromium(site, browser):
    """The search box, offline from file://: `retain_graph` finds every page that has it, 01 first
    (its title); a rarer word finds exactly its pages; Enter opens the first hit."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    problems, offsite = [], []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.route("**/*", lambda r: r.continue_() if r.request.url.startswith(("file://", "data:"))
               else (offsite.append(r.request.url), r.abort()))
    pages = sorted(p.name for p in site.glob("*.html"))
    assert {"index.html", "teachers_guide.html", "handout.html"} <= set(pages)

    def results(start: str, query: str) -> list:
        page.goto((site / start).as_uri(), wait_until="load")
        box = page.locator(".bt-search input")
        box.fill("")
        box.type(query)
        page.wait_for_selector(".bt-search .bt-count")
        return page.evaluate("() => [...document.querySelectorAll('.bt-search .bt-results > li.bt-page')]"
                             ".map(li => li.dataset.page)")

    found = results("04_retain_grad_placement.html", "retain_graph")
    assert found[0] == "01_shared_graph_retain_graph.html", found
    assert set(found) == searchable_pages(site, "retain_graph") and "teachers_guide.html" in found
    rare = "repackage_hidden"
    want = searchable_pages(site, rare)
    assert 0 < len(want) < len(pages) and set(results("index.html", rare)) == want, want
    assert results("index.html", "xyzzy_not_in_the_course") == []
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    results("index.html", "retain_graph")
    page.screenshot(path=str(ARTIFACTS / "site-search.png"))
    page.locator(".bt-search input").press("Enter")
    page.wait_for_load_state("load")
    assert "01_shared_graph_retain_graph.html" in page.url
    assert problems == [] and offsite == [], (problems, offsite)
    page.close()


# ---------------------------------------------------------------- accessibility (issue 30 §4)


def axe_violations(page, axe_js: str) -> list[str]:
    """'rule: element: message' for every violation axe-core finds on the page as it is now: the WCAG
    2.1 A and AA rules, plus heading-order and landmark-unique."""
    page.add_script_tag(content=axe_js)
    found = page.evaluate("""async ([tags, rules]) => {
        const out = [];
        for (const only of [{type: 'tag', values: tags}, {type: 'rule', values: rules}]) {
            const r = await axe.run(document, {runOnly: only});
            for (const v of r.violations) for (const n of v.nodes)
                out.push(v.id + ': ' + n.target.join(' ') + ': ' + ((n.any[0] || n.all[0] || n.none[0] || {}).message || v.help));
        }
        return out; }""", [AXE_TAGS, AXE_RULES])
    return found


def test_every_page_passes_axe_with_folds_closed_and_open(site, browser):
    from scripts.build_site import install_axe

    axe_js = install_axe().read_text()
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    pages = sorted(p.name for p in site.glob("*.html"))
    assert len(pages) >= len(NOTEBOOKS) + 1
    problems, checked = [], 0
    for name in pages:
        page.goto((site / name).as_uri(), wait_until="load", timeout=30_000)
        problems += [f"{name} (as loaded): {v}" for v in axe_violations(page, axe_js)]
        opened = page.evaluate("() => { const d = [...document.querySelectorAll('details')]; "
                               "d.forEach(x => x.open = true); return d.length; }")
        if opened:
            problems += [f"{name} (every fold open): {v}" for v in axe_violations(page, axe_js)]
        checked += 1 + bool(opened)
    page.close()
    assert checked > len(pages)             # folds exist and were opened somewhere
    assert not problems, f"{len(problems)} axe violation(s):\n" + "\n".join(problems[:40])


def test_a_keyboard_crosses_a_page_without_stopping_at_every_cell_and_hears_the_search_count(site, browser):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto((site / page_of(NOTEBOOKS[1])).as_uri(), wait_until="load", timeout=30_000)
    cells = page.evaluate("() => document.querySelectorAll('.jp-Cell-inputWrapper').length")
    stops = page.evaluate("""() => [...document.querySelectorAll('.jp-Cell-inputWrapper, .jp-OutputArea-output')]
        .filter(e => e.tabIndex >= 0).map(e => [...e.querySelectorAll('pre, div'), e]
        .some(x => x.scrollWidth > x.clientWidth + 1 || x.scrollHeight > x.clientHeight + 1))""")
    assert cells > 20
    assert all(stops), "a cell that does not scroll is still a tab stop"
    assert len(stops) < cells / 4, (len(stops), cells)        # was one per cell and per output
    page.fill(".bt-search input", "retain_graph")
    said = page.evaluate("() => document.querySelector('.bt-search [role=status]').textContent")
    assert re.fullmatch(r"\d+ pages?, \d+ sections? found", said), said
    page.press(".bt-search input", "Escape")
    assert page.evaluate("() => document.querySelector('.bt-search [role=status]').textContent") == ""
    page.close()
