"""Build a static HTML site of every notebook, with its committed outputs, into build/site/.

    bash scripts/site                     # the usual way (uses .venv)
    python scripts/build_site.py [--out DIR] [notebooks ...]

For reading without a kernel: a teacher's projector, a learner's phone. Pages show the
committed outputs (graphs, charts, the stepper's frames); nothing is executed.

Offline at build and at view time: no script or style is fetched from a CDN (nbconvert's
require.js, MathJax, mermaid and widget-manager tags are left out), math is turned into
MathML at build time (browsers render it natively), pictures are the SVG/PNG already in
the notebooks. Notebook links become page links, `README.md` becomes the contents page,
links to other repository files point to plain-text copies under `_repo/`.
Search, offline: a search box on every page, over every page (notebooks, contents, handout,
teacher's guide), one entry per section. The index is built at build time with lunr's own index
builder (npm package lunr, installed once into .npm-tools/; scripts/site_search.js) and shipped as
search/index.js with lunr.min.js: plain <script> tags, so it works from file:// with no server.
Folded as in JupyterLab: a "Going deeper" section (GUIDE.md) becomes a closed <details> whose
summary is its heading, and a cell with hidden source (check cells, solutions) shows its code in
a closed <details>; their outputs stay visible.
"""
from __future__ import annotations

import argparse
import html
import json
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import time

import jinja2
import nbformat
from nbconvert import HTMLExporter, TemplateExporter
from nbconvert.filters.highlight import Highlight2HTML
from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath
from nbconvert.filters.widgetsdatatypefilter import WidgetsDataTypeFilter

# nav: notebook order, titles; lengths: Going deeper; handout: the handout and guide pages, the print stylesheet
from scripts import BUILD, ROOT, handout, lengths, nav, npm_install

DEFAULT_OUT = BUILD / "site"
LUNR_VERSION = "2.3.9"                   # the npm package lunr: index builder (Node) and search (browser)
NPM_TOOLS = ROOT / ".npm-tools"          # npm install --prefix .npm-tools (ignored by git)
LUNR_PKG = NPM_TOOLS / "node_modules" / "lunr"
SEARCH_DIR = "search"
SEARCH_BOX = ('<span class="bt-search" role="search"><input type="search" placeholder="Search the course" '
              'aria-label="Search the course" autocomplete="off"><ol class="bt-results" hidden></ol>'
              '<span class="bt-sr bt-search-status" role="status" aria-live="polite"></span></span>'
              f'<script src="{SEARCH_DIR}/lunr.min.js"></script><script src="{SEARCH_DIR}/index.js"></script>'
              f'<script src="{SEARCH_DIR}/search.js"></script>')

SITE_CSS = """
.bt-nav { font: 14px/1.4 system-ui, sans-serif; display: flex; gap: 1.5em; flex-wrap: wrap;
          padding: 8px 16px; background: #f3f5f7; border-bottom: 1px solid #d0d7de; }
.bt-nav.bottom { border-top: 1px solid #d0d7de; border-bottom: none; margin-top: 2em; }
.bt-nav a { text-decoration: none; }
.bt-nav .bt-here { color: #555; }
details.bt-hidden-source { margin: 4px 0 4px 64px; }
figure.bt-figure details.bt-words > summary { cursor: pointer; font: 13px system-ui, sans-serif; color: #333; }
figure.bt-figure details.bt-words > pre { font: 12px/1.35 "DejaVu Sans Mono", monospace; color: #1a1a1a; }
details.bt-hidden-source > summary { cursor: pointer; color: #555; font: 13px system-ui, sans-serif; }
details.bt-deeper { border-left: 3px solid #d0d7de; margin: 0.5em 0; }
details.bt-deeper > summary { cursor: pointer; padding-left: 76px; }
details.bt-deeper > summary > div { display: inline-block; padding: 0; }
details.bt-deeper > summary :is(h2, h3, h4) { display: inline; margin: 0; }
details.bt-deeper > summary::after { content: " (folded: click to open)"; color: #555;
                                     font: 13px system-ui, sans-serif; }
details.bt-deeper[open] > summary::after { content: ""; }
math[display="block"] { margin: 0.6em 0; }
.bt-search { position: relative; margin-left: auto; }
.bt-search input { font: 14px system-ui, sans-serif; padding: 2px 6px; width: 16em; }
.bt-search .bt-results { position: absolute; right: 0; z-index: 10; width: 32em; max-height: 70vh; overflow-y: auto;
  margin: 4px 0 0 0; padding: 6px 10px; list-style: none; background: #fff; border: 1px solid #d0d7de;
  box-shadow: 0 4px 12px rgba(0,0,0,.15); }
.bt-search .bt-results li { margin: 0 0 8px 0; }
.bt-search .bt-results ul { margin: 2px 0 0 0; padding-left: 1.2em; }
.bt-search .bt-page-link { font-weight: bold; }
.bt-search .bt-count { color: #555; }
.bt-search .bt-snippet { color: #444; font-size: 13px; }
@media print { .bt-search { display: none; } }
.bt-sr { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
:focus-visible { outline: 3px solid #1f5f99; outline-offset: 2px; }
/* WCAG 2.1 AA (docs/accessibility.md): JupyterLab's code colours, prompts and error text are below
   4.5:1 on its #f5f5f5 code background (comments #408080 4.17:1, operators #aa22ff 4.39:1, numbers
   #008800 4.25:1, prompts #b0b0b0 2.16:1, error text #e75c58 on #ffdddd 2.74:1): each is replaced
   by a darker shade of the same hue, every one at least 5.7:1. Links inside text are underlined: a
   colour 1.86:1 from the text around it does not tell a link apart. Set on body (the theme sets
   them on :root, later in the page): body's own values are what every cell inherits. */
body {
  --jp-mirror-editor-atom-color: #4a4acf; --jp-mirror-editor-attribute-color: #0000b3;
  --jp-mirror-editor-bracket-color: #5e5e45; --jp-mirror-editor-builtin-color: #006b00;
  --jp-mirror-editor-comment-color: #2e6666; --jp-mirror-editor-def-color: #0000d6;
  --jp-mirror-editor-error-color: #c00000; --jp-mirror-editor-keyword-color: #006b00;
  --jp-mirror-editor-link-color: #0000b3; --jp-mirror-editor-meta-color: #7a1fb8;
  --jp-mirror-editor-number-color: #006b00; --jp-mirror-editor-operator-color: #7a1fb8;
  --jp-mirror-editor-property-color: #004b8f; --jp-mirror-editor-punctuation-color: #004b8f;
  --jp-mirror-editor-qualifier-color: #555555; --jp-mirror-editor-quote-color: #006b00;
  --jp-mirror-editor-string-color: #a31c1c; --jp-mirror-editor-tag-color: #116600;
  --jp-cell-prompt-not-active-font-color: #616161; --jp-cell-prompt-not-active-opacity: 1;
  --jp-cell-inprompt-font-color: #1f5f99; --jp-cell-outprompt-font-color: #9c4228;
}
body .jp-InputPrompt, body .jp-OutputPrompt { color: #616161; opacity: 1; }
html body .jp-RenderedText pre .ansi-red-fg, html body .ansi-red-fg { color: #a8201a; }
html body .jp-RenderedHTMLCommon a:link, html body .jp-RenderedHTMLCommon a:visited,
html body main a:link, html body main a:visited { text-decoration: underline; }
""" + handout.PRINT_CSS

# JupyterLab's export makes every code cell and output a tab stop (tabindex=0), so that a keyboard can
# scroll one that is wider than the page: page 01 took 398 Tab presses to cross. After layout, only
# the ones that really scroll keep their tab stop (WCAG 2.1.1 and axe's scrollable-region-focusable).
TAB_STOPS_JS = """(function () {
  function trim() {
    document.querySelectorAll('.jp-Cell-inputWrapper[tabindex="0"], .jp-OutputArea-output[tabindex="0"]').forEach(function (e) {
      var scrolls = [e].concat(Array.prototype.slice.call(e.querySelectorAll('pre, div'))).some(function (x) {
        return x.scrollWidth > x.clientWidth + 1
          || (x.scrollHeight > x.clientHeight + 1 && getComputedStyle(x).overflowY !== 'visible');
      });
      if (!scrolls) e.removeAttribute('tabindex');
    });
  }
  if (document.readyState === 'complete') trim(); else window.addEventListener('load', trim);
})();"""

TEMPLATE = r"""
{%- extends 'index.html.j2' -%}
{%- block html_head_js -%}{%- endblock html_head_js -%}
{%- block jupyter_widgets -%}{%- endblock jupyter_widgets -%}
{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
{%- block extra_css -%}<style type="text/css">{{ resources.bt_css }}</style>{%- endblock extra_css -%}
{%- block body_header -%}
{{ super() }}
{{ resources.bt_nav_top }}
{%- endblock body_header -%}
{%- block body_footer -%}
{{ resources.bt_nav_bottom }}
<script>{{ resources.bt_tab_stops }}</script>
{{ super() }}
{%- endblock body_footer -%}
{% block input -%}
{#- nbconvert passes every highlighted code cell through bleach, which dominated the build time;
    Pygments output of our own committed source is already escaped. -#}
<div class="jp-CodeMirrorEditor jp-Editor jp-InputArea-editor" data-type="inline">
     <div class="cm-editor cm-s-jupyter">
{{ cell.source | highlight_code(metadata=cell.metadata) }}
     </div>
</div>
{%- endblock input %}
{% block data_png scoped -%}
{#- nbconvert's lab block, plus the alt text helpers.notebook puts in a figure's output metadata -#}
<div class="jp-RenderedImage jp-OutputArea-output {{ extra_class }}">
<img src="data:image/png;base64,{{ output.data['image/png'] | escape_html }}"
{%- set alt = output | get_metadata('alt', 'image/png') -%}
{%- if alt %} alt="{{ alt | escape_html }}"{% endif -%}
{%- set width = output | get_metadata('width', 'image/png') -%}
{%- if width is not none %} width={{ width | escape_html }}{% endif -%}
{%- set height = output | get_metadata('height', 'image/png') -%}
{%- if height is not none %} height={{ height | escape_html }}{% endif %} class="">
</div>
{%- endblock data_png %}
{% block any_cell scoped -%}
{#- Going deeper sections, marked by fold_going_deeper(): closed <details>, the heading as summary -#}
{%- for _ in range(cell.metadata.get('bt_close_before', 0)) %}</details>{% endfor -%}
{%- if cell.metadata.get('bt_deeper') -%}
<details class="bt-deeper"><summary><div class="jp-RenderedHTMLCommon jp-RenderedMarkdown">
{{- cell.metadata.bt_deeper | markdown2html -}}</div></summary>
{%- endif -%}
{{ super() }}
{%- for _ in range(cell.metadata.get('bt_close_after', 0)) %}</details>{% endfor -%}
{%- endblock any_cell %}
{% block input_group -%}
{%- if cell.metadata.get('jupyter', {}).get('source_hidden') -%}
<details class="bt-hidden-source"><summary>Hidden code: click to show</summary>
{{ super() }}
</details>
{%- else -%}
{{ super() }}
{%- endif -%}
{%- endblock input_group %}
"""


def mathml(tex: str, display: str) -> str:
    """LaTeX to MathML; if it cannot be converted, the TeX source as code (never a crash)."""
    from latex2mathml.converter import convert

    try:
        return convert(html.unescape(tex).strip(), display=display)
    except Exception:   # an odd formula must not break the site
        return f'<code class="bt-tex">{html.escape(tex)}</code>'


class MathMLRenderer(IPythonRenderer):
    """nbconvert's markdown renderer, with math turned into MathML instead of left for MathJax."""

    def inline_math(self, body: str) -> str:
        return mathml(body, "inline")

    def block_math(self, body: str) -> str:
        return mathml(body, "block")

    def latex_environment(self, name: str, body: str) -> str:
        return mathml(f"\\begin{{{name}}}{body}\\end{{{name}}}", "block")


class SiteExporter(HTMLExporter):
    @jinja2.pass_context
    def markdown2html(self, context, source):
        cell = context.get("cell", {})
        renderer = MathMLRenderer(escape=False, attachments=cell.get("attachments", {}),
                                  embed_images=self.embed_images,
                                  path=context.get("resources", {}).get("metadata", {}).get("path", ""),
                                  anchor_link_text=self.anchor_link_text,
                                  exclude_anchor_links=self.exclude_anchor_links, **self.lexer_options)
        return MarkdownWithMath(renderer=renderer).render(source)

    def from_notebook_node(self, nb, resources=None, **kw):
        """HTMLExporter's conversion without its BeautifulSoup pass over the whole page (a third
        of the build time); the two things that pass does are done here with regular expressions
        on the template's own markup: alt text for images without one, and focusable cells."""
        langinfo = nb.metadata.get("language_info", {})
        lexer = langinfo.get("pygments_lexer", langinfo.get("name", None))
        self.register_filter("highlight_code", self.filters.get(
            "highlight_code", Highlight2HTML(pygments_lexer=lexer, parent=self)))
        resources = self._init_resources(resources)
        self.register_filter("filter_data_type", WidgetsDataTypeFilter(
            notebook_metadata=self._nb_metadata, parent=self, resources=resources))
        body, resources = TemplateExporter.from_notebook_node(self, nb, resources, **kw)
        body = _IMG_NO_ALT.sub(r'<img alt="No description has been provided for this image"\1>', body)
        body = _FOCUSABLE.sub(r'\1 tabindex="0"', body)
        return body, resources


_IMG_NO_ALT = re.compile(r"<img(?![^>]*\balt=)(\s[^>]*)?>")
# the cell input wrapper and every output div of the lab template (as nbconvert marks them)
_FOCUSABLE = re.compile(r'(<div class="(?:jp-Cell-inputWrapper|[^"]*\bjp-OutputArea-output\b[^"]*)")(?![^>]*tabindex)')


def fold_going_deeper(nb) -> int:
    """Mark each Going deeper section for the template; returns how many there are.

    Where sections start and end is scripts/lengths.py's rule (`lengths.sections`, as JupyterLab
    folds a collapsed heading). A markdown cell is split where a Going deeper section opens or
    closes inside it, so a section opens and closes between cells. The opening heading becomes
    the <details> summary (metadata bt_deeper) and leaves its cell; bt_close_before /
    bt_close_after count the sections that end around a cell."""
    cells, sections, open_now = [], 0, 0
    for cell, pieces in lengths.sections(nb):
        groups = []             # [text, opens a Going deeper section, Going deeper sections it closes]
        for p in pieces:
            closes, opens = p.closes.count("deeper"), p.opens == "deeper"
            if groups and not closes and not opens:
                groups[-1][0] += "\n" + p.text
            else:
                groups.append([p.text, opens, closes])
        if cell.cell_type != "markdown" or len(groups) <= 1:
            out = [cell]
        else:
            out = []
            for n, (text, _, _) in enumerate(groups):
                piece = nbformat.v4.new_markdown_cell(text)
                piece.metadata = dict(cell.metadata) if n == 0 else {}
                piece.attachments = cell.get("attachments", {})
                out.append(piece)
        for piece, (_, opens, closes) in zip(out, groups or [(None, False, 0)]):
            if closes:
                piece.metadata["bt_close_before"] = closes
            if opens:
                sections += 1
                piece.metadata["bt_deeper"], _, piece.source = piece.source.partition("\n")
            open_now += opens - closes
        cells += out
    if open_now and cells:
        cells[-1].metadata["bt_close_after"] = open_now
    nb.cells = cells
    return sections


def export(exp, nb, name: str, **resources) -> str:
    """The page `exp` (an nbconvert exporter) makes of `nb`, as the site and the slides make it: the
    notebook's widget views dropped (each falls back to its output's static form), files relative
    to the notebooks folder. Extra resources go to the template."""
    nb.metadata.pop("widgets", None)
    body, _ = exp.from_notebook_node(nb, resources={"metadata": {"name": name, "path": str(nav.NB_DIR)}, **resources})
    return body


def exporter() -> SiteExporter:
    return SiteExporter(template_name="lab", template_file="bt_site.html.j2",
                        extra_loaders=[jinja2.DictLoader({"bt_site.html.j2": TEMPLATE})])


def page_name(notebook_file: str) -> str:
    return notebook_file[:-len(".ipynb")] + ".html"


def nav_bar(items, i, where) -> str:
    parts = []
    if i is not None and i > 0:
        parts.append(f'<a rel="prev" href="{page_name(items[i - 1]["file"])}">← {html.escape(items[i - 1]["title"])}</a>')
    parts.append('<a href="index.html">Contents</a>' if i is not None else '<span class="bt-here">Contents</span>')
    if i is not None and i + 1 < len(items):
        parts.append(f'<a rel="next" href="{page_name(items[i + 1]["file"])}">{html.escape(items[i + 1]["title"])} →</a>')
    if where == "top":
        parts.append(SEARCH_BOX)
    label = "Course pages" if where == "top" else "Course pages, again at the end"   # two navs: each named
    return f'<nav class="bt-nav {where}" aria-label="{label}">' + "".join(parts) + "</nav>"


_ATTR = re.compile(r'(<(?:a|img)\b[^>]*?\b(?:href|src)=")([^"]*)(")')


def rewrite_links(text: str, items, out: pathlib.Path, copied: set) -> str:
    """Notebook links -> pages, README.md -> index.html, other repository files -> _repo/ copies."""
    pages = {it["file"] for it in items}

    def fix(m):
        url = html.unescape(m.group(2))
        if not url or url.startswith("#") or re.match(r"^[a-z][a-z0-9+.-]*:", url, re.I):
            return m.group(0)        # in-page anchor, or http(s)/mailto/data: left alone
        path, _, frag = url.partition("#")
        frag = f"#{frag}" if frag else ""
        if path in pages:
            new = page_name(path) + frag
        elif path in ("README.md", "./README.md"):
            new = "index.html" + frag
        else:
            target = (nav.NB_DIR / path).resolve()
            try:
                rel = target.relative_to(ROOT)
            except ValueError:
                return m.group(0)
            if not target.is_file():
                return m.group(0)    # left as is: the link check reports it
            keep = target.suffix.lower() in (".png", ".jpg", ".jpeg", ".svg", ".gif", ".html", ".txt")
            dest = out / "_repo" / (str(rel) if keep else str(rel) + ".txt")
            if dest not in copied:
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(target, dest)
                copied.add(dest)
            new = dest.relative_to(out).as_posix() + frag
        return m.group(1) + html.escape(new, quote=True) + m.group(3)

    return _ATTR.sub(fix, text)


def markdown_page(items, title: str, markdown: str, after: str = "", main_class: str = "") -> str:
    """A page that is not a notebook (contents, handout, teacher's guide), with the site's bars."""
    body = MarkdownWithMath(renderer=MathMLRenderer(escape=False, exclude_anchor_links=True)).render(markdown)
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1.0\">"
            f"<title>{html.escape(title)}</title><style>"
            "body{font:16px/1.5 system-ui,sans-serif;margin:0}main{max-width:60em;margin:1em auto;padding:0 1em}"
            "table{border-collapse:collapse}td,th{border:1px solid #d0d7de;padding:6px 10px;text-align:left}"
            + SITE_CSS + "</style></head><body>" + nav_bar(items, None, "top")
            + f'<main class="{main_class}">' + body + after + "</main></body></html>\n")


def index_page(items, extra=()) -> str:
    """The contents page; `extra`: [(file, title)] of the handout and guide pages, linked below the table."""
    links = " · ".join(f'<a href="{name}">{html.escape(title.split(": ", 1)[-1])}</a>' for name, title in extra)
    return markdown_page(
        items, "Backward Twice: contents", nav.contents_page(items),
        (f"<p>For teachers: {links}.</p>" if links else "") +
        "<p>This is a read-only copy with the outputs of the last committed run. To run the notebooks, "
        "clone the repository and run <code>bash scripts/lab</code>.</p>")


def build(out: pathlib.Path = DEFAULT_OUT, only=None) -> list:
    """Write the site; returns the pages written (index first)."""
    loaded = [nav.info(p) for p in nav.notebooks()]
    items = [it for _, it in loaded]
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    exp, copied, written = exporter(), set(), []
    extra = handout.pages(loaded)
    (out / "index.html").write_text(rewrite_links(index_page(items, [(n, t) for n, t, _ in extra]), items, out, copied),
                                    encoding="utf-8")
    written.append(out / "index.html")
    for name, title, markdown in extra:
        (out / name).write_text(rewrite_links(markdown_page(items, title, markdown, main_class="bt-handout"),
                                              items, out, copied), encoding="utf-8")
        written.append(out / name)
    for i, (nb, it) in enumerate(loaded):
        if only and it["file"] not in only:
            continue
        nb.metadata["title"] = it["title"]
        fold_going_deeper(nb)
        body = export(exp, nb, it["title"], bt_css=SITE_CSS, bt_tab_stops=TAB_STOPS_JS, bt_nav_top=nav_bar(items, i, "top"),
                      bt_nav_bottom=nav_bar(items, i, "bottom"))
        page = out / page_name(it["file"])
        page.write_text(rewrite_links(body, items, out, copied), encoding="utf-8")
        written.append(page)
    if not only:                          # the index covers every page: only on a full build
        write_search(out, written)
    return written


AXE_VERSION = "4.14.1"                    # the npm package axe-core: the accessibility rules the tests run
AXE_JS = NPM_TOOLS / "node_modules" / "axe-core" / "axe.min.js"
AXE_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]   # the WCAG 2.1 A and AA rules
AXE_RULES = ["heading-order", "landmark-unique"]          # and two best-practice rules issue 30 adds


def install_axe() -> pathlib.Path:
    """axe-core from its npm package, once, into .npm-tools/ (for tests/test_site.py and test_slides.py)."""
    npm_install(f"axe-core@{AXE_VERSION}", NPM_TOOLS, AXE_JS, "accessibility tests")
    return AXE_JS


def install_lunr() -> pathlib.Path:
    """lunr from its npm package, once, into .npm-tools/ (then the build needs no network)."""
    npm_install(f"lunr@{LUNR_VERSION}", NPM_TOOLS, LUNR_PKG / "lunr.min.js", "site")
    return LUNR_PKG


_SECTION_HEAD = re.compile(r'<h([1-3])\b[^>]*?\bid="([^"]+)"[^>]*>(.*?)</h\1>', re.S)
_DROP = re.compile(r'<(script|style|nav|svg|math)\b.*?</\1>|<details class="bt-hidden-source">.*?</details>', re.S)


def plain(fragment: str) -> str:
    text = re.sub(r"<[^>]+>", " ", fragment)
    return " ".join(html.unescape(text).replace("\u00b6", " ").split())


def search_docs(page: pathlib.Path, out: pathlib.Path) -> list:
    """One search entry per section (h1-h3 with an id) of a built page: its title, heading, text."""
    body = page.read_text(encoding="utf-8")
    title = plain((re.search(r"<title>(.*?)</title>", body, re.S) or re.search("()", "")).group(1)) or page.stem
    body = _DROP.sub(" ", body.split("<body", 1)[-1])
    heads = list(_SECTION_HEAD.finditer(body))
    name = page.relative_to(out).as_posix()
    docs = []
    if not heads or plain(body[:heads[0].start()]):
        docs.append({"id": name, "page": name, "title": title, "section": "",
                     "text": plain(body[:heads[0].start()] if heads else body)})
    for k, m in enumerate(heads):
        end = heads[k + 1].start() if k + 1 < len(heads) else len(body)
        docs.append({"id": f"{name}#{m.group(2)}", "page": name, "title": title, "section": plain(m.group(3)),
                     "text": plain(body[m.end():end])})
    return [d for d in docs if d["text"] or d["section"]]


def write_search(out: pathlib.Path, pages: list) -> None:
    """search/: lunr.min.js, the index of every page (lunr's builder, in Node) and the box's script."""
    lunr = install_lunr()
    node = shutil.which("node")
    if node is None:
        raise SystemExit("site: node is needed to build the search index (Debian: apt-get install nodejs)")
    dest = out / SEARCH_DIR
    dest.mkdir(exist_ok=True)
    shutil.copyfile(lunr / "lunr.min.js", dest / "lunr.min.js")
    shutil.copyfile(ROOT / "scripts" / "site_search_ui.js", dest / "search.js")
    docs = [d for page in pages for d in search_docs(page, out)]
    with tempfile.TemporaryDirectory() as tmp:
        source = pathlib.Path(tmp) / "docs.json"
        source.write_text(json.dumps(docs), encoding="utf-8")
        subprocess.run([node, str(ROOT / "scripts" / "site_search.js"), str(lunr), str(source), str(dest / "index.js")],
                       check=True, timeout=300, stdout=subprocess.DEVNULL)


def main(argv) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=pathlib.Path, default=DEFAULT_OUT)
    ap.add_argument("notebooks", nargs="*", help="only these notebook files (default: all)")
    args = ap.parse_args(argv)
    start = time.perf_counter()
    pages = build(args.out.resolve(), {pathlib.Path(n).name for n in args.notebooks} or None)
    print(f"site: {len(pages)} pages in {args.out} ({time.perf_counter() - start:.1f} s); "
          f"open {args.out / 'index.html'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
