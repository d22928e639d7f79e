"""Present a notebook's core path as slides, offline: nbconvert's reveal.js slides, with a
reveal.js installed locally from its npm package (no CDN), and slide metadata set from the skeleton.

    bash scripts/slides                       # every notebook -> build/slides/NN_name.slides.html
    bash scripts/slides notebooks/01_*.ipynb  # only these
    python scripts/slides.py --write          # store the slide metadata in the notebooks
    python scripts/slides.py --check          # exit 1 if a notebook's stored metadata is out of date

Slides follow the skeleton (scripts/skeleton.py): the title and every `##` section of the core
path start a slide, a `###` heading a sub-slide (reveal.js: down); the cells under them stay on
that slide (`-`), so a section's before/after picture and its live error show where the section
is. Skipped: the set-up cells before the first section, Going deeper sections, folded check
cells, solutions and the navigation. The metadata is `slideshow.slide_type`, the key RISE and
nbconvert read. (jupyterlab-rise 0.43.1 installs next to jupyterlab 4.6.6 but shows a blank
page there: see the README, "Teaching with it".)
"""
from __future__ import annotations

import argparse
import copy
import pathlib
import re
import shutil
import subprocess
import sys

import jinja2
import nbformat
from nbconvert import SlidesExporter

from scripts import ROOT, build_site, lengths, nav, skeleton  # build_site: MathML instead of MathJax, export

DEFAULT_OUT = ROOT / "build" / "slides"
REVEAL_VERSION = "4.6.0"                     # the npm package reveal.js; nbconvert's template is written for 4.x
REVEAL_HOME = ROOT / ".reveal"               # npm install --prefix .reveal (ignored by git)
REVEAL_PKG = REVEAL_HOME / "node_modules" / "reveal.js"


def slide_types(nb) -> list:
    """The slideshow.slide_type of every cell, from the skeleton."""
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


TEMPLATE = r"""
{%- extends 'index.html.j2' -%}
{%- block html_head_js -%}{%- endblock html_head_js -%}
{%- block jupyter_widgets -%}{%- endblock jupyter_widgets -%}
{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}
{%- block html_head_css -%}<style>
.reveal .slides > section, .reveal .slides > section > section { height: 100%; overflow-y: auto !important; }
.reveal .jp-OutputArea-output img, .reveal .jp-OutputArea-output svg { max-width: 100%; height: auto; }
</style>{%- endblock html_head_css -%}
{% block footer_js %}
<script src="{{ resources.reveal.url_prefix }}/dist/reveal.js"></script>
<script src="{{ resources.reveal.url_prefix }}/plugin/notes/notes.js"></script>
<script>
Reveal.initialize({controls: true, progress: true, history: true, slideNumber: "c/t",
                   transition: "none", plugins: [RevealNotes], width: 1280, height: 800, margin: 0.03});
</script>
{% endblock footer_js %}
"""


class OfflineSlides(SlidesExporter):
    markdown2html = build_site.SiteExporter.markdown2html    # math as MathML, as on the site


def exporter() -> OfflineSlides:
    return OfflineSlides(template_name="reveal", template_file="bt_slides.html.j2",
                         extra_loaders=[jinja2.DictLoader({"bt_slides.html.j2": TEMPLATE})],
                         reveal_url_prefix="reveal.js", reveal_theme="white", reveal_scroll=True)


def install_reveal() -> pathlib.Path:
    """reveal.js from its npm package, once, into .reveal/ (the slides then need no network)."""
    if not (REVEAL_PKG / "dist" / "reveal.js").is_file():
        npm = shutil.which("npm")
        if npm is None:
            raise SystemExit("slides: npm is needed once to install reveal.js (Debian: apt-get install npm)")
        REVEAL_HOME.mkdir(exist_ok=True)
        subprocess.run([npm, "install", "--prefix", str(REVEAL_HOME), "--no-audit", "--no-fund",
                        "--loglevel=error", f"reveal.js@{REVEAL_VERSION}"], check=True, timeout=300)
    return REVEAL_PKG


def build(out=DEFAULT_OUT, only=None) -> list:
    reveal = install_reveal()
    out.mkdir(parents=True, exist_ok=True)
    dest = out / "reveal.js"
    if not dest.is_dir():
        for part in ("dist", "plugin"):
            shutil.copytree(reveal / part, dest / part)
    exp, written = exporter(), []
    for path in nav.notebooks():
        if only and path.name not in only:
            continue
        nb = with_slides(nbformat.read(path, as_version=4))
        body = build_site.export(exp, nb, nav.title_of(nb))
        body = re.sub(r'href="(\d\d_\w+)\.ipynb', r'href="\1.slides.html', body)   # to the other decks
        page = out / (path.stem + ".slides.html")
        page.write_text(body, encoding="utf-8")
        written.append(page)
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
