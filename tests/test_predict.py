"""Slides and notebooks that let the class predict (issue 30 §5): nothing gives a live error away
before the reveal.

The rule, precisely:
- **Notebooks.** Before a *live error* (a code cell whose committed output is an error, or a code
  cell that checks one with `expect_raised(...)` when the cell before it raised nothing), the
  *lead-in* is the run of markdown cells immediately before it (back to the previous code cell)
  and the comments in its own source. The lead-in names no error class (`RuntimeError`,
  `TypeError`, `WorkerError`, ...) and says none of raise/raises/raised/raising, fail/fails/
  failed/failing/failure, crash/crashes/crashed.
- **Slides.** On a slide that asks "Predict first" (scripts/slides.py puts the error on the next
  click), everything shown before the click (the title and every block that is not a fragment,
  the question itself left out) follows the same rule, and nothing comes after the question on
  that slide: the cell's output, its check (`expect_raised(...)`) and what follows go to the next slide.
"""
import re

import nbformat
import pytest

from scripts import nav, slides

GIVEAWAY = re.compile(r"\b([A-Z]\w*(?:Error|Exception)|raise[sd]?|raising|fail(?:s|ed|ing|ure)?|crash(?:es|ed)?)\b")


def _comments(source: str) -> list[str]:
    return [line.split("#", 1)[1] for line in source.splitlines() if "#" in line and not line.lstrip().startswith("%")]


def _is_live_error(nb, i: int) -> bool:
    cell = nb.cells[i]
    if cell.cell_type != "code":
        return False
    if any(o.get("output_type") == "error" for o in cell.get("outputs", [])):
        return True
    if "expect_raised(" not in cell.source:
        return False
    before = next((c for c in reversed(nb.cells[:i]) if c.cell_type == "code"), None)
    return before is None or not any(o.get("output_type") == "error" for o in before.get("outputs", []))


def giveaways(nb) -> list[str]:
    """[cell id: the words that give the error away] over every live error's lead-in."""
    found = []
    for i, cell in enumerate(nb.cells):
        if not _is_live_error(nb, i):
            continue
        lead = []
        j = i - 1
        while j >= 0 and nb.cells[j].cell_type == "markdown":
            lead.append((nb.cells[j].get("id"), nb.cells[j].source))
            j -= 1
        lead += [(cell.get("id"), c) for c in _comments(cell.source)]
        for cid, text in lead:
            words = sorted({m.group(0) for m in GIVEAWAY.finditer(text)})
            if words:
                found.append(f"{cid} (before {cell.get('id')}): {', '.join(words)}")
    return found


NOTEBOOKS = nav.notebooks()


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem[:2] for p in NOTEBOOKS])
def test_no_notebook_gives_a_live_error_away_before_it_runs(path):
    nb = nbformat.read(path, as_version=4)
    assert not giveaways(nb), "\n".join(giveaways(nb))


def test_the_notebook_rule_finds_a_giveaway():
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("So call 4 fails, live:"),
                nbformat.v4.new_code_cell("d.backward()   # a second time: raises"),
                nbformat.v4.new_code_cell('expect_raised(RuntimeError, "Trying")'),
                nbformat.v4.new_markdown_cell("Passing it today is a `TypeError`."),
                nbformat.v4.new_code_cell("with expect_raised(TypeError):\n    f(x)")]
    nb.cells[1].outputs = [nbformat.v4.new_output("error", ename="RuntimeError", evalue="x", traceback=[])]
    found = giveaways(nb)
    assert [f.split(":")[1].strip() for f in found] == ["fails", "raises", "TypeError"], found


def _before_the_click(slide) -> str:
    body = "".join(b.html for b in slide.blocks)
    shown = re.sub(r'<(\w+)[^>]*class="[^"]*\bfragment\b(?! fade-out)[^"]*"[^>]*>.*?</\1>', "", body, flags=re.S)
    shown = shown.replace(slides.PREDICT, "")
    return slides.html_to_text(slide.title + "\n" + shown)


def predict_problems(deck) -> list[str]:
    bad = []
    for k, s in enumerate(deck, 1):
        if not any("bt-predict-stack" in b.html for b in s.blocks):
            continue
        words = sorted({m.group(0) for m in GIVEAWAY.finditer(_before_the_click(s))})
        if words:
            bad.append(f"slide {k}: {', '.join(words)} before the click")
        after = s.blocks[[i for i, b in enumerate(s.blocks) if "bt-predict-stack" in b.html][-1] + 1:]
        if after:
            bad.append(f"slide {k}: {len(after)} block(s) after the question, shown before the click")
    return bad


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem[:2] for p in NOTEBOOKS])
def test_no_slide_gives_the_answer_away_before_the_click(path):
    deck = slides.deck(nbformat.read(path, as_version=4))
    assert not predict_problems(deck), "\n".join(predict_problems(deck))


def test_deck_01_has_predict_slides_and_the_rule_sees_them():
    deck = slides.deck(nbformat.read(NOTEBOOKS[1], as_version=4))
    asking = [s for s in deck if any("bt-predict-stack" in b.html for b in s.blocks)]
    assert len(asking) >= 4
    s = asking[0]
    spoiled = slides.Slide(s.title + " So it raises:", s.key, s.blocks)
    assert predict_problems([spoiled]) == ["slide 1: raises before the click"]
