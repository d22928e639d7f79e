"""The picture's visual language: each colour and mark has one meaning, in every tool (draw,
watch, compare, the stepper, draw_steps, why_backward) and in the charts (helpers.plots).
`MEANINGS` registers every colour the pictures and charts use with its one meaning; registering
a colour twice is an error at import, and tests/test_palette.py fails when a picture or a chart
uses a colour outside it or a legend gives a colour another meaning. `legend()` shows the whole
language (notebook 00, the cheat sheet)."""
from __future__ import annotations

import html

from .scene import Cell

# (colour, meaning): the one list. A "family" of fills (the training step that made an op) is one
# meaning: 'made by training step k', each step its own fill.
_COLOURS = (
    ("LEAF", "#cfe8fc", "leaf tensor (fill), with its .grad"),
    ("OP", "#eeeeee", "op (grad_fn) (fill), with what it saved"),
    ("NAMED", "#d9f2d0", "tensor you named (fill)"),
    ("HELD", "#1e6b30", "saved tensor HELD in memory (green text, the word HELD)"),
    ("FREED", "#c0392b", "saved tensor FREED by backward (red text, struck through)"),
    ("MODIFIED", "#00727d", "saved, then modified in place (teal text)"),
    ("VALUE", "#666666", "details (grey text): settings, a shared buffer, a saved tensor recomputed in backward, "
                         "a .grad not kept"),
    ("HIGHLIGHT", "#ffb703", "the node running in this step (amber fill)"),
    ("RAN", "#6a3d9a", "ran #k: ran in this backward call, k-th (purple frame)"),
    ("CHANGED", "#0b62a4", ".grad changed by this call (blue frame, bold value)"),
    ("STOP", "#e0457b", "where backward stopped, and the path from the loss to it (pink)"),
    ("CLUSTER", "#7a8a9a", "a box standing for several nodes: module call, folded or counted nodes (slate)"),
    ("EDGE", "#555555", "edges and op frames (dark grey)"),
    ("CALL_FILL", "#f4f6f8", "a box standing for several nodes (pale fill)"),
    ("FADED", "#b8b8b8", "unchanged, faded so the change stands out (pale frame, no fill)"),
    ("FADED_TEXT", "#6e6e6e", "the text of an unchanged, faded box (grey, 5.1:1 on white: readable)"),
    ("PAIR", "#999999", "the frame of each picture of a before/after pair"),
    ("FOCUS", "#202020", "the keyboard focus ring of a control (the stepper's buttons and slider)"),
    ("STEP0", "#d0d0d0", "made by training step k (fill): before the loop"),
    ("STEP1", "#f6c8c0", "made by training step k (fill): step 1, or an earlier step"),
    ("STEP2", "#fff0a8", "made by training step k (fill): step 2, or this step"),
    ("STEP3", "#dcebb0", "made by training step k (fill): step 3"),
    ("STEP4", "#eadbc8", "made by training step k (fill): step 4 and later"),
    # charts (helpers.plots): the k-th series of a chart, line or bar; none is a colour of the pictures
    ("SERIES1", "#1a85ff", "a chart's series k (line or bar): the 1st (blue)"),
    ("SERIES2", "#e66100", "a chart's series k (line or bar): the 2nd (orange)"),
    ("SERIES3", "#000000", "a chart's series k (line or bar): the 3rd (black)"),
    ("SERIES4", "#8c510a", "a chart's series k (line or bar): the 4th (brown)"),
    ("SERIES5", "#4b0092", "a chart's series k (line or bar): the 5th (indigo)"),
)
MEANINGS: dict[str, str] = {}
for _name, _colour, _meaning in _COLOURS:
    if _colour in MEANINGS:
        raise ValueError(f"palette: {_colour} means both {MEANINGS[_colour]!r} and {_meaning!r}")
    MEANINGS[_colour] = _meaning
(LEAF, OP, NAMED, HELD, FREED, MODIFIED, VALUE, HIGHLIGHT, RAN, CHANGED, STOP, CLUSTER, EDGE, CALL_FILL, FADED,
 FADED_TEXT, PAIR, FOCUS) = (c for _, c, _ in _COLOURS[:18])
STEP_FILLS = tuple(c for n, c, _ in _COLOURS if n.startswith("STEP"))
STEP_WORDS = ("grey", "salmon", "yellow", "lime", "beige")
SERIES = tuple(c for n, c, _ in _COLOURS if n.startswith("SERIES"))     # a chart's series, in order


def family(colour: str) -> str:
    """The meaning of a colour, its step-family words dropped ('made by training step k (fill)')."""
    return MEANINGS[colour].split(":")[0]


def swatch(bg=None, colour=None, style=None, border=None) -> Cell:
    return Cell(bg=bg, frame_colour=colour, style=style, border=border, width=12, height=10)


LEGEND = {
    "leaf": (swatch(LEAF), "leaf tensor, with its .grad"),
    "op": (swatch(OP), "op (grad_fn), with what it saved"),
    "named": (swatch(NAMED), "tensor you named (dashed: made by)"),
    "held": (swatch(HELD), "saved tensor held in memory"),
    "freed": (swatch(FREED), "saved tensor FREED by backward"),
    "modified": (swatch(MODIFIED), "saved, then modified in place"),
    "running": (swatch(HIGHLIGHT), "the node running in this step"),
    "ran": (swatch(RAN), "ran #k: ran in this backward, k-th"),
    "changed": (swatch(CHANGED), ".grad changed by this call"),
    "faded": (swatch(colour=FADED, border=1), "unchanged by this call (faded)"),
    "ref": (swatch(LEAF, style="dashed", border=1), "same leaf, drawn again near a far use"),
    "transpose": (swatch(), ".T: used transposed (TBackward0)"),
    "module": (swatch(colour=CLUSTER, style="rounded", border=1), "module call: saved bytes held / freed"),
    "repeat": (swatch(CALL_FILL, colour=CLUSTER, style="dashed", border=1), "xN: N blocks like this one, folded"),
    "more": (swatch(colour=CLUSTER, style="dashed", border=1), "nodes beyond max_nodes, counted"),
    "above": (swatch(colour=CLUSTER, style="dashed", border=1), "nodes from the focus to the roots, counted"),
    "outside": (swatch(colour=CLUSTER, style="dashed", border=1), "nodes outside the module (in, above), counted"),
    "chain": (swatch(OP, colour=EDGE, style="dashed", border=1), "A \u2192 B: ops in a chain, none saved a tensor"),
    "ops": (swatch(OP, colour=EDGE, border=1), "A \u2192 B: ops outside the module calls, their totals"),
    "region": (swatch(colour=CLUSTER, style="dashed", border=1), "unchanged nodes, counted, not drawn"),
}


# Grey text (VALUE) has one meaning, 'details'. A legend explains it in ONE entry, which names
# the details this picture shows in grey; no two legend entries share the grey swatch.
DETAILS = {"recomputed": "recomputed in backward (not held)", "shared": "shared buffer (counted once)"}


def details_words(parts) -> str:
    return "grey text: details - " + ", ".join(dict.fromkeys(parts))


def entries(keys, extra=()) -> list:
    """Legend entries [(swatch Cell, words)] for `keys` (LEGEND's, or DETAILS'), then `extra`
    ((colour, words), ...). Every grey detail (keys in DETAILS, extras in VALUE) is merged into
    one 'grey text: details' entry, where the first of them stood."""
    out, details, at = [], [], None
    for colour, words in [(None, k) for k in keys] + list(extra):
        if colour is None and words not in DETAILS:
            out.append(LEGEND[words])
        elif colour is None or colour == VALUE:
            at = len(out) if at is None else at
            details.append(DETAILS[words] if colour is None else words)
        else:
            out.append((swatch(colour), words))
    if details:
        out.insert(at, (swatch(VALUE), details_words(details)))
    return out


class Legend:
    """The whole visual language as a table: text/plain (what nbval compares) and text/html."""

    def rows(self) -> list[tuple[str, str]]:
        return [(c, MEANINGS[c]) for _, c, _ in _COLOURS if c not in (EDGE, PAIR, FOCUS)]

    def __repr__(self) -> str:
        return "\n".join(f"{c}  {m}" for c, m in self.rows())

    def _repr_mimebundle_(self, include=None, exclude=None):
        cells = "".join(f'<tr><td style="background:{c};width:2em;border:1px solid #999"></td>'
                        f"<td style=\"text-align:left\">{html.escape(m)}</td></tr>" for c, m in self.rows())
        return {"text/plain": repr(self), "text/html": f"<table>{cells}</table>"}


def legend() -> Legend:
    """Every colour of the pictures and its one meaning: `from backward_twice import legend; legend()`.

    Example (run by tests/test_docstrings.py):

        >>> import backward_twice as bt
        >>> print(repr(bt.legend()).splitlines()[0])
        #cfe8fc  leaf tensor (fill), with its .grad
    """
    return Legend()
