"""A picture: SVG in JupyterLab, its DOT for the golden files, a stable text elsewhere."""
from __future__ import annotations

import html
import re

from .layout import MIN_TEXT_PX, layout_note, reads_at, refused, smallest_text_px, stack_svgs, svg_from_dot, svg_img, svg_width_pt

# Every picture's output carries the DOT it was drawn from (sizes measured by a layout blanked:
# they depend on the Graphviz build and fonts). nbval compares it like text/plain, so a fresh run
# that draws differently fails; tests/test_golden_pictures.py compares it with tests/golden/.
DOT_MIME = "text/vnd.graphviz"


def dot_record(*sources: str) -> str:
    """The DOT source(s) of one output, as stored in DOT_MIME: measured box sizes blanked."""
    return "\n".join(_MEASURED.sub(r'\1="~"', s).rstrip("\n") for s in sources) + "\n"


_MEASURED = re.compile(r'\b(WIDTH|HEIGHT)="\d+"')


class Picture:
    """Something that shows as SVG in JupyterLab and as stable text elsewhere.

    alternative: DOT sources of pictures to stack, one above the other, instead (before above
    after), used when the first one's smallest text is under MIN_TEXT_PX at notebook width and
    that is narrower. `dot` is then the sources actually drawn, and `stacked` is True.
    simpler: a function giving simpler DOT sources, simplest last (fewer nodes drawn, each
    picture saying so itself), tried in order when the picture does not read at MIN_TEXT_PX:
    the first that reads is drawn (`simplified` then says which, 1-based), else the most readable.
    A picture whose layout was refused (too costly: backward_twice.layout) does not read, whatever the
    size of the note shown instead. `text` describes the picture drawn: when a simpler one is, it
    says so, and any layout note is the drawn picture's (with `simpler`, reading it lays out).
    """

    def __init__(self, dot_source: str, text: str, alternative: tuple[str, ...] | None = None,
                 simpler=None, alt: str | None = None):
        self.dot = dot_source
        self._text = text
        self._alt = alt
        self.alternative = alternative
        self.simpler = simpler
        self.stacked = False
        self.simplified = 0
        self._svg = None

    @property
    def text(self) -> str:
        """The text form (what nbval compares): the picture's words, then what backward_twice.layout
        simplified or refused in the DOT drawn (deterministic: it depends on that source only),
        and, when a simpler picture is drawn, that it shows fewer nodes than the text lists. That
        last line depends on the laid-out text size, so on the Graphviz build and its fonts: a
        committed output that carries it could differ on another build (none of the notebooks'
        does; nbval would say so)."""
        if self._svg is None and (self.simpler is not None or (self.alternative is not None and any(
                map(layout_note, (self.dot, *self.alternative))))):
            _ = self.svg        # which picture is drawn (and so what to say) is known once laid out
        drawn = self.alternative if self.stacked else (self.dot,)
        notes = list(dict.fromkeys(n for n in map(layout_note, drawn) if n is not None))
        if self.simplified:
            notes.append(f"picture: simplified to read at notebook width (simpler picture {self.simplified}): "
                         "fewer nodes are drawn than listed above, the rest counted in one box (its title "
                         "says how many; max_nodes= draws more).")
        return "\n".join([self._text, *notes])

    @text.setter
    def text(self, value: str) -> None:
        self._text = value

    @property
    def alt(self) -> str:
        """The text alternative (the <img>'s alt): what the picture teaches in a few sentences
        (picture.alt_text: what was freed and by which call, what is held and by whom, what ran,
        which gradients changed); the text form's first line when none was given."""
        if self._alt is not None:
            return self._alt
        return self.text.splitlines()[0] if self.text else "autograd graph"

    @property
    def svg(self) -> str:
        if self._svg is None:
            svg = svg_from_dot(self.dot)
            if self.alternative is not None and smallest_text_px(svg) < MIN_TEXT_PX:
                other = stack_svgs([svg_from_dot(d) for d in self.alternative])
                if svg_width_pt(other) < svg_width_pt(svg):
                    svg, self.stacked = other, True
                    self.dot = "\n".join(self.alternative)   # what was drawn: the pictures stacked
            if self.simpler is not None and not _reads(svg):
                best = (_text_px(svg), svg, self.dot, 0)
                for k, dot in enumerate(self.simpler(), 1):
                    other = svg_from_dot(dot)
                    if _text_px(other) > best[0]:
                        best = (_text_px(other), other, dot, k)
                    if _reads(other):
                        break
                _, svg, self.dot, self.simplified = best
            self._svg = svg
        return self._svg

    def _repr_mimebundle_(self, include=None, exclude=None):
        svg = self.svg                          # first: the text says which picture is drawn
        # The SVG goes out once, as an <img> in text/html (README, "Stable outputs": every
        # front-end shows text/html before image/svg+xml, JupyterLab shows raw SVG only in
        # trusted notebooks and GitHub not at all); text/plain is what nbval compares.
        page = figure_html(svg_img(svg, self.alt, style="max-width:100%"), self.text)
        return {"text/plain": self.text, "text/html": page, DOT_MIME: dot_record(self.dot)}

    def __repr__(self) -> str:
        return self.text

    def save(self, path) -> None:
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.svg)


WORDS_SUMMARY = "The picture in words"


def figure_html(img: str, words: str) -> str:
    """The picture and, one click away beside it, its full description (the text form): a
    <figure> whose <figcaption> is a closed <details>. JupyterLab's sanitizer keeps figure,
    figcaption, details, summary and pre in an untrusted output, and drops aria-*: so no
    aria-describedby. scripts/slides.py puts the same <details> under a slide's picture."""
    return ('<figure class="bt-figure" style="margin:0">' + img
            + f'<figcaption><details class="bt-words"><summary>{WORDS_SUMMARY}</summary>'
            f'<pre style="white-space:pre-wrap">{html.escape(words)}</pre></details></figcaption></figure>')


def _reads(svg: str) -> bool:
    """Whether a laid-out picture reads at MIN_TEXT_PX: a refused layout's note does not count."""
    return not refused(svg) and reads_at(svg)


def _text_px(svg: str) -> float:
    """smallest_text_px, with a refused layout the least readable of all."""
    return float("-inf") if refused(svg) else smallest_text_px(svg)
