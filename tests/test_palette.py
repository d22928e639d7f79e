"""One visual language (issue 20 §3): each colour of every picture has one meaning."""
import pathlib
import re

import pytest
import torch

from backward_twice import legend, step_through, watch
from backward_twice.diagnosis_picture import StepClock, draw_steps
from backward_twice.graph import draw
from backward_twice.picture import palette
from backward_twice.picture.snapshot_boxes import holder_words, saved_rows
from backward_twice.snapshot import Saved, SavedState

ROOT = pathlib.Path(__file__).resolve().parent.parent
TOOL = ROOT / "backward_twice"
COLOUR = re.compile(r"#[0-9a-fA-F]{6}\b")


def test_the_palette_refuses_a_colour_with_two_meanings():
    src = (TOOL / "picture" / "palette.py").read_text()
    twice = src.replace('("PAIR", "#999999"', '("PAIR", "#6a3d9a"')      # purple: already 'ran #k'
    with pytest.raises(ValueError, match="#6a3d9a means both"):
        exec(compile(twice, "palette_twice.py", "exec"), {"__name__": "backward_twice.picture.palette_twice",
                                                        "__package__": "backward_twice.picture"})


def test_every_colour_in_the_picture_code_is_registered():
    for p in [*TOOL.glob("picture/*.py"), TOOL / "modules.py", TOOL / "diagnosis_picture.py",
              TOOL / "stepper.py", TOOL / "graph.py", TOOL / "render.py", ROOT / "helpers" / "plots.py"]:
        if p.name == "palette.py":
            continue
        stray = set(COLOUR.findall(p.read_text())) - set(palette.MEANINGS)
        assert not stray, f"{p.name} uses {stray}: register each colour, with its one meaning, in palette.py"


def _legends(dot: str):
    """{colour: words} from the legend rows of a DOT source (a swatch cell, then its words)."""
    out = {}
    for colour, words in re.findall(r'<TD WIDTH="\d+" HEIGHT="\d+"(?: BGCOLOR="(#\w+)")?[^>]*></TD>'
                                    r'<TD ALIGN="LEFT"><FONT POINT-SIZE="10">([^<]*)</FONT>', dot):
        if colour:
            out.setdefault(colour, set()).add(words)
    return out


# what a legend must say next to each colour: the registered meaning, in any tool's words
SAYS = {palette.RAN: "ran", palette.HIGHLIGHT: "running", palette.CHANGED: "changed", palette.STOP: "stopped",
        palette.FREED: "FREED", palette.HELD: "held", palette.MODIFIED: "modified", palette.LEAF: "leaf",
        palette.VALUE: "grey text: details", **{c: "step" for c in palette.STEP_FILLS[1:]},
        palette.STEP_FILLS[0]: "made"}


def _check_legend(dot: str) -> set:
    """The filled swatches of a picture's legend, each checked: a registered colour, explained in
    the words of its one meaning, and no two entries with the same swatch (colour, frame, style)
    saying two things. Returns the colours used."""
    swatches = re.findall(r'<TD WIDTH="\d+" HEIGHT="\d+"( BGCOLOR="#\w+"[^>]*)></TD>'
                          r'<TD ALIGN="LEFT"><FONT POINT-SIZE="10">([^<]*)</FONT>', dot)
    seen = {}
    for attrs, words in swatches:
        assert seen.setdefault(attrs, words) == words, f"one swatch,{attrs}, two entries: {seen[attrs]!r}, {words!r}"
    for colour, words in _legends(dot).items():
        assert colour in palette.MEANINGS, (colour, words)
        for w in words:
            assert SAYS.get(colour, "") in w, f"{colour} ({palette.MEANINGS[colour]}) explained as {w!r}"
    return set(_legends(dot))


def test_one_colour_one_meaning_across_every_tool():
    """draw, watch (ran #k, changed .grad), the stepper (running node), draw_steps (made by step k)
    and a why_backward picture (where backward stopped): every colour a legend shows is registered,
    and no two tools' legends give one colour two meanings."""
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.retain_grad()
    z = (y.exp() * x).sum()
    dots = [draw(z, names={"x": x, "z": z}).dot]
    with watch(z, names={"x": x, "y": y, "z": z}, title="backward") as w:
        z.backward(retain_graph=True)
    dots.append(w.picture.dot)
    st = step_through(lambda: z.backward(), z, names={"x": x})
    dots += [st.dot(i) for i in range(len(st.frames))]
    clock, w2, h = StepClock(), torch.tensor([0.5], requires_grad=True), torch.ones(1)
    for _ in range(3):
        clock.tick()
        h = torch.tanh(h * w2)
    dots.append(draw_steps(h, clock=clock, names={"w": w2}).dot)
    from backward_twice.diagnose import why_backward_failed
    loss = h.sum()
    loss.backward()
    try:
        loss.backward()
    except RuntimeError as err:
        dots.append(why_backward_failed(err, names={"w": w2, "h": h, "loss": loss}).picture.dot)
    # grey details: a shared buffer (exp's result, saved twice) and tensors a checkpoint recomputes
    from torch.utils.checkpoint import checkpoint
    a = torch.tensor([1.0, 2.0], requires_grad=True)
    e = a.exp()
    both = (checkpoint(lambda t: (t * 2).tanh(), a, use_reentrant=False) + e * e).sum()
    dots.append(draw(both, names={"a": a}).dot)
    used = set()
    for dot in dots:
        used |= _check_legend(dot)
    assert {palette.RAN, palette.HIGHLIGHT, palette.CHANGED, palette.STOP, palette.VALUE} <= used
    grey = [w for w in _legends(dots[-1])[palette.VALUE]]      # both details, in one entry
    assert grey == ["grey text: details - recomputed in backward (not held), shared buffer (counted once)"]


def test_a_legend_that_gives_grey_another_meaning_fails():
    """The old legend said 'recomputed ...' and 'shared buffer ...' beside one grey swatch: two
    meanings. The check refuses it, and palette.entries merges every grey detail into one entry."""
    from backward_twice.picture.dot_writer import legend_html

    two = legend_html([(palette.swatch(palette.VALUE), "recomputed in backward (checkpoint), not held"),
                       (palette.swatch(palette.VALUE), "shared buffer: counted once")])
    with pytest.raises(AssertionError, match="two entries"):
        _check_legend(two)
    with pytest.raises(AssertionError, match="explained as"):
        _check_legend(legend_html([(palette.swatch(palette.VALUE), "settings")]))
    merged = palette.entries(["leaf", "recomputed", "held", "shared"], extra=((palette.VALUE, "a note"),))
    assert [w for _, w in merged] == [
        "leaf tensor, with its .grad",
        "grey text: details - recomputed in backward (not held), shared buffer (counted once), a note",
        "saved tensor held in memory"]
    _check_legend(legend_html(merged))


def test_charts_use_their_own_registered_colours():
    """helpers.plots draws every series in a registered chart colour (palette.SERIES), none of
    them a colour of the graph pictures, and never matplotlib's default cycle."""
    from matplotlib.colors import to_hex

    from helpers.plots import bars, line_panels, lines, timeline

    assert all(palette.MEANINGS[c].startswith("a chart's series") for c in palette.SERIES)
    graph_colours = set(palette.MEANINGS) - set(palette.SERIES)
    assert not set(palette.SERIES) & graph_colours and len(set(palette.SERIES)) == len(palette.SERIES)
    five = {n: [i, i + 1] for i, n in enumerate("ABCDE")}
    figs = [lines([1, 2], five, "t", "x", "y"), timeline({"a": [3, 1], "b": [3, 2]}, "t"),
            line_panels([1, 2], {"p": ("y", five)}, "t", "x"), bars({"a": 1, "b": 2, "c": 3}, "t", "y", colors=[2, 0, 0])]
    drawn = [[to_hex(line.get_color()) for ax in f.axes for line in ax.lines] for f in figs[:3]]
    assert drawn == [list(palette.SERIES), list(palette.SERIES[:2]), list(palette.SERIES)]
    assert [to_hex(b.get_facecolor()) for b in figs[3].axes[0].patches] == [palette.SERIES[2], *palette.SERIES[:1] * 2]
    with pytest.raises(ValueError, match="is not a chart colour"):
        bars({"a": 1}, "t", "y", colors=["#4a90d9"])
    with pytest.raises(ValueError, match="at most 5 series"):
        lines([1], {n: [1] for n in "ABCDEF"}, "t", "x", "y")


def test_the_legend_shows_the_whole_language():
    text = repr(legend())
    assert "ran #k" in text and "where backward stopped" in text and "made by training step k" in text
    assert len(text.splitlines()) == len(palette.MEANINGS) - 3       # edges, the pair's frame, the focus ring left out
    assert "a chart's series k (line or bar): the 2nd (orange)" in text                # the charts' colours too


def _saved(**kw):
    return Saved(slot="self", state=SavedState.FREED, is_tensor=True, shape=(2,), dtype="float32", nbytes=8, **kw)


@pytest.mark.parametrize("held_by, words", [
    (None, " - holder unknown"), ((), " - memory returned"),
    (("leaf x",), " - still held by leaf x, no memory returned")])
def test_a_freed_row_says_who_still_holds_the_buffer(held_by, words):
    import dataclasses
    import types

    assert holder_words(types.SimpleNamespace(slot="self")) == ""   # a Saved without held_by: unchanged
    s = dataclasses.replace(_saved(), held_by=held_by)               # engine-robust's Saved.held_by
    assert holder_words(s) == words
    spans = saved_rows(types.SimpleNamespace(saved=[s]))[0][0].spans
    assert [sp.text for sp in spans[-3:-1]] == ["FREED", ""] and spans[-2].br     # FREED, then a line
    # the picture's line is the text's words, less ', no memory returned' ('still held by' says it)
    assert " - " + spans[-1].text == words.removesuffix(", no memory returned")
