"""A picture: SVG in JupyterLab, its DOT for the golden files, a stable text elsewhere."""
from __future__ import annotations

import re

from .layout import MIN_TEXT_PX, layout_note, reads_at, smallest_text_px, stack_svgs, svg_from_dot, svg_img, svg_width_pt

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
    """

    def __init__(self, dot_source: str, text: str, alternative: tuple[str, ...] | None = None,
                 simpler=None):
        self.dot = dot_source
        # a picture too costly to lay out as drawn is simplified or refused (helpers.layout): its
        # text says so (deterministic: it depends on the source only)
        self.text = text if layout_note(dot_source) is None else f"{text}\n{layout_note(dot_source)}"
        self.alternative = alternative
        self.simpler = simpler
        self.stacked = False
        self.simplified = 0
        self._svg = None

    @property
    def svg(self) -> str:
        if self._svg is None:
            svg = svg_from_dot(self.dot)
            if self.alternative is not None and smallest_text_px(svg) < MIN_TEXT_PX:
                other = stack_svgs([svg_from_dot(d) for d in self.alternative])
                if svg_width_pt(other) < svg_width_pt(svg):
                    svg, self.stacked = other, True
                    self.dot = "\n".join(self.alternative)   # what was drawn: the pictures stacked
            if self.simpler is not None and not reads_at(svg):
                best = (smallest_text_px(svg), svg, self.dot, 0)
                for k, dot in enumerate(self.simpler(), 1):
                    other = svg_from_dot(dot)
                    if smallest_text_px(other) > best[0]:
                        best = (smallest_text_px(other), other, dot, k)
                    if reads_at(other):
                        break
                _, svg, self.dot, self.simplified = best
            self._svg = svg
        return self._svg

    def _repr_mimebundle_(self, include=None, exclude=None):
        # The SVG goes out once, as an <img> in text/html (README, "Stable outputs": every
        # front-end shows text/html before image/svg+xml, JupyterLab shows raw SVG only in
        # trusted notebooks and GitHub not at all); text/plain is what nbval compares.
        alt = self.text.splitlines()[0] if self.text else "autograd graph"
        html_img = svg_img(self.svg, alt, style="max-width:100%")
        return {"text/plain": self.text, "text/html": html_img, DOT_MIME: dot_record(self.dot)}

    def __repr__(self) -> str:
        return self.text

    def save(self, path) -> None:
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.svg)


