"""A picture: SVG in JupyterLab, its DOT for the golden files, a stable text elsewhere."""
from __future__ import annotations

import html
import re

from .layout import (
    CORE_MAX_HEIGHT_PX,
    CORE_TEXT_PX,
    MIN_TEXT_PX,
    at_shown_size,
    fits,
    layout_note,
    smallest_text_px,
    stack_svgs,
    svg_from_dot,
    svg_img,
    svg_width_pt,
)

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

    Every picture is held to one rule (picture.layout.fits: text at least 11 px, at most 900 px
    tall, shown 860 px wide; a picture whose text is larger than that may be shown smaller than
    drawn: layout.at_shown_size). alternative: DOT sources of pictures to stack, one above the other,
    instead (before above after), used when the first does not fit and they do (or, as before,
    when its text is under MIN_TEXT_PX and they are narrower). `dot` is then the sources actually
    drawn, and `stacked` is True. simpler: a function giving simpler DOT sources, simplest last
    (fewer nodes drawn, each picture saying so itself), tried in order when the picture does not
    fit: the first that fits is drawn (`simplified` then says which, 1-based); when none does, a
    card, one box of words (card_lines), saying what the picture would hold (simplified == CARD).
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
        self.held_to_rule = True    # False: drawn as asked, however large (draw(modules=, expand=...))
        self._svg = None
        self._drawn = None          # _drawn_svg's picture, when drawn_fits laid it out and it did not fit

    @property
    def text(self) -> str:
        """The text form (what nbval compares): the picture's words, then what backward_twice.layout
        simplified or refused in the DOT drawn (deterministic: it depends on that source only),
        and, when a simpler picture is drawn, that it shows fewer nodes than the text lists. That
        last line depends on the laid-out text size, so on the Graphviz build and its fonts: a
        committed output that carries it could differ on another build (none of the notebooks'
        does; nbval would say so)."""
        if self._svg is None:
            _ = self.svg        # which picture is drawn (and so what to say) is known once laid out
        words = self._text
        titles = getattr(self, "simpler_titles", None)
        if self.simplified > 0 and titles and len(titles) >= self.simplified:   # the title of the picture drawn
            words = "\n".join([titles[self.simplified - 1], *words.splitlines()[1:]])
        drawn = (getattr(self, "_stacked_sources", None) or self.alternative) if self.stacked else (self.dot,)
        notes = list(dict.fromkeys(n for n in map(layout_note, drawn) if n is not None))
        if self.simplified == CARD:
            notes.append("picture: no drawing of this graph reads at notebook width (11 px text, 900 px tall): "
                         "one box says what it holds; the lines above list every node.")
        elif self.simplified:
            notes.append(f"picture: simplified to read at notebook width (simpler picture {self.simplified}): "
                         "fewer nodes are drawn than listed above, the rest counted in one box (its title "
                         "says how many; max_nodes= draws more).")
        return "\n".join([words, *notes])

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
        """The picture drawn: its own choice (_drawn_svg), held to the one rule (layout.fits: text at
        least 11 px and at most 900 px tall at notebook width); when it breaks it, the first of the
        simpler pictures that keeps it, else a card saying what the picture would hold."""
        if self._svg is None:
            if self.held_to_rule and self._surely_unfit():
                self._svg = self._fitted()          # not laid out: too many boxes to fit at all
            else:
                svg = self._drawn if self._drawn is not None else self._drawn_svg()
                self._svg = svg if not self.held_to_rule else at_shown_size(svg) if fits(svg) else self._fitted()
        return self._svg

    def drawn_fits(self) -> bool:
        """Whether the picture as its kind draws it keeps the rule (layout.fits), told without trying
        its simpler pictures: how another picture tests it as one of its own simpler pictures (one box
        per module call). True is what `not self.simplified` says once `svg` is drawn."""
        if self._svg is None:
            if self.held_to_rule and self._surely_unfit():
                return False
            svg = self._drawn if self._drawn is not None else self._drawn_svg()
            if not (fits(svg) or not self.held_to_rule):
                self._drawn = svg          # `svg`, if asked, goes on to the simpler pictures from here
                return False
            self._svg = at_shown_size(svg) if self.held_to_rule else svg
        return not self.simplified

    def _surely_unfit(self) -> bool:
        """Whether no form of this picture can fit, told before laying it out: cannot_fit of its DOT for a
        picture that draws that DOT (or it stacked, taller still); a kind with forms of its own to choose
        among (_drawn_svg overridden: a module picture's overview) only by the box count, as its other
        forms may have fewer ranks."""
        if type(self)._drawn_svg is not Picture._drawn_svg:
            from ..layout import measure
            return measure(self.dot).nodes > FIT_MAX_BOXES
        return cannot_fit(self.dot)

    def _drawn_svg(self) -> str:
        """The picture as its kind draws it (a subclass chooses among its forms here)."""
        svg = svg_from_dot(self.dot)
        if self.alternative is not None and not fits(svg):
            other = stack_svgs([svg_from_dot(d) for d in self.alternative])
            if fits(other) or (smallest_text_px(svg) < MIN_TEXT_PX and svg_width_pt(other) < svg_width_pt(svg)):
                svg, self.stacked = other, True
                self.dot = "\n".join(self.alternative)   # what was drawn: the pictures stacked
        return svg

    def _fitted(self) -> str:
        """The first simpler picture that fits (self.simplified: its number, 1-based), else the card
        (self.simplified = CARD)."""
        for k, dot in enumerate(self.simpler() if self.simpler is not None else (), 1):
            many = isinstance(dot, tuple)        # pictures to stack (a pair cut to fewer nodes)
            if cannot_fit("\n".join(dot) if many else dot):
                continue
            other = stack_svgs([svg_from_dot(d) for d in dot]) if many else svg_from_dot(dot)
            if fits(other):
                self.dot = "\n".join(dot) if many else dot
                self.simplified, self.stacked, self._stacked_sources = k, many, dot if many else None
                return at_shown_size(other)
        self.dot, self.simplified, self.stacked, self._stacked_sources = card_dot(self.card_lines()), CARD, False, None
        return svg_from_dot(self.dot)

    def card_lines(self) -> list[str]:
        """What the card says when no picture fits: its first line is the picture's first words."""
        head = getattr(self, "card_head", None) or (self._text.splitlines()[0] if self._text else "autograd graph")
        return [head[:80], "too large to draw so that its text reads (11 px) on one screen (900 px)",
                "print(pic) lists every node; draw(..., focus=tensor) draws the part that feeds it"]

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


CARD = -1      # Picture.simplified when the card is drawn

# A picture of more boxes than this cannot fit 900 px at 11 px text (645 pt x 675 pt at natural size, a
# box at least ~80 x 20 pt plus its rank gap): it is not laid out (a 20,000-node pair took 35 s to try)
FIT_MAX_BOXES = 200


# Every box is at least a Graphviz node's default height (0.5 in: no picture sets a smaller `height`),
# and ranks are dot_writer's ranksep (0.15 in) apart.
MIN_RANK_PT, RANK_GAP_PT = 36.0, 10.8
_FONT_SIZES = re.compile(r'(?:POINT-SIZE|fontsize)="?(\d+(?:\.\d+)?)')


def cannot_fit(dot: str) -> bool:
    """Whether `dot` surely breaks layout.fits, told from its text without laying it out: too many
    boxes, or a chain of arrows so long that its ranks alone are too tall. A picture's smallest text
    is at most its largest font size f (14 pt, Graphviz's default, if larger than any set), so reading
    at 11 px it is shown at least 11 / (f * 4/3) of its size, and its natural height can be at most
    900 px / (4/3) / that; it is at least ranks x MIN_RANK_PT plus the gaps between them."""
    from ..layout import measure
    cost = measure(dot)
    if cost.nodes > FIT_MAX_BOXES:
        return True
    if "height=" in dot:        # a box drawn smaller than the default: no bound from ranks
        return False
    largest = max((float(v) for v in _FONT_SIZES.findall(dot)), default=14.0)
    least_scale = CORE_TEXT_PX / (max(largest, 14.0) * 4 / 3)
    tallest_pt = CORE_MAX_HEIGHT_PX * 3 / 4 / least_scale
    return cost.ranks * MIN_RANK_PT + max(0, cost.ranks - 1) * RANK_GAP_PT > tallest_pt


def card_dot(lines: list[str]) -> str:
    """DOT of one box of words: the last resort, which always fits (a few short lines at 12-14 pt)."""
    from . import dot_writer
    from .palette import CLUSTER
    from .scene import Box, Cell, Scene, Span, Table

    rows = [[Cell([Span(lines[0], bold=True)])], *([Cell([Span(line)], size=12)] for line in lines[1:])]
    scene = Scene()
    scene.add(Box("card", Table(rows, cellspacing=None, cellpadding=4, colour=CLUSTER, style="dashed"), "more",
                  simple=True))
    return dot_writer.write(scene)
