"""Every graph picture says in words what it teaches (issue 30 §1): its <img>'s alt names the saved
tensors FREED (and by which call), what is HELD and by whom, what ran, which gradients changed;
the full text form is one click away beside it, in a <figure>'s <figcaption> <details> (JupyterLab
strips aria-* from untrusted outputs, so no aria-describedby)."""
import html
import re

import nbformat
import pytest
import torch

import backward_twice as bt
from backward_twice.graph import DOT_MIME, draw, watch
from backward_twice.picture.alt_text import LISTED
from scripts import notebooks

IMG_ALT = re.compile(r'<img alt="([^"]*)" src="data:image/svg\+xml')
OP_LINE = re.compile(r"^(op\d+) (\S+)\(")
FREED_LINE = re.compile(r"^\s+FREED (\S+?)(?: \(|:)")


def freed_in(text: str) -> list[tuple[str, str]]:
    """[(op name, slot)] of the FREED rows of a text form (of its last section: a pair's 'after')."""
    section = text.split("== after", 1)[-1].split("== change ==", 1)[0]
    out, op = [], None
    for line in section.splitlines():
        m = OP_LINE.match(line)
        if m:
            op = m.group(2)
        m = FREED_LINE.match(line)
        if m and op:
            out.append((op, m.group(1)))
    return out


def names_what_was_freed(alt: str, freed) -> list[str]:
    """Why `alt` does not name what was freed ([] when it does): each freed (op, slot) is named
    (its op name and its slot), unless the list says 'and N more'."""
    if not freed:
        return []
    if "FREED" not in alt:
        return ["the alt never says FREED"]
    listed_all = " more" not in alt
    return [f"{op}.{slot} not named" for op, slot in freed
            if listed_all and not (op in alt and re.search(rf"(?<![\w.]){re.escape(slot)}(?!\w)", alt))]


def alts(page: str) -> list[str]:
    return [html.unescape(a) for a in IMG_ALT.findall(page)]


@pytest.fixture
def graph():
    a = torch.tensor([1.0, 2.0], requires_grad=True)
    b = torch.tensor([3.0, 4.0], requires_grad=True)
    c = a * b
    d = c.exp().sum()
    return {"a": a, "b": b, "c": c, "d": d}


def test_a_watch_pair_says_what_its_call_freed_and_who_still_holds_it(graph):
    with watch(graph["d"], names=graph, title="d.backward()") as w:
        graph["d"].backward()
    (alt,) = alts(w._repr_mimebundle_()["text/html"])
    assert "FREED by d.backward(): ExpBackward0's result, MulBackward0's other (= b) and self (= a)." in alt
    assert "still held by leaf a" in alt and "still held by leaf b" in alt
    assert "Backward ran 5 nodes, in order: SumBackward0, ExpBackward0, MulBackward0" in alt
    assert "Gradients changed: a.grad: None -> [21.8, 218]" in alt or "a.grad: None ->" in alt
    assert not names_what_was_freed(alt, freed_in(w.picture.text))
    # more than the title
    assert alt.split(". ", 1)[0] != w.picture.text.splitlines()[0]


def test_after_view_and_a_later_draw_name_what_was_freed(graph):
    with watch(graph["d"], names=graph, title="d.backward()") as w:
        graph["d"].backward()
    for pic in (w.after_view(), draw(graph["d"], names=graph)):
        assert not names_what_was_freed(pic.alt, freed_in(pic.text)), pic.alt
    assert "FREED by d.backward()" in w.after_view().alt
    assert "FREED: " in draw(graph["d"], names=graph).alt      # which call: not known to a later draw


def test_a_picture_before_backward_says_what_is_held_and_by_which_node(graph):
    alt = draw(graph["d"], names=graph).alt
    assert "FREED" not in alt
    assert "HELD, each by the node that saved it: ExpBackward0's result, MulBackward0's other (= b) and self (= a)." in alt


def test_the_full_description_is_one_click_away_without_aria(graph):
    page = draw(graph["d"], names=graph)._repr_mimebundle_()["text/html"]
    assert page.startswith('<figure class="bt-figure"')
    words = re.search(r"<figcaption><details class=\"bt-words\"><summary>The picture in words</summary>"
                      r"<pre[^>]*>(.*)</pre></details></figcaption></figure>$", page, re.S)
    assert words and html.unescape(words.group(1)) == draw(graph["d"], names=graph).text
    assert "aria-" not in page


def test_the_alt_is_deterministic(graph):
    assert draw(graph["d"], names=graph).alt == draw(graph["d"], names=graph).alt


def test_a_long_list_is_cut_and_says_how_many_more():
    x = torch.ones(3, requires_grad=True)
    y = x
    for _ in range(LISTED + 3):
        y = y.exp()
    y = y.sum()
    with watch(y, names={"x": x}) as w:
        y.backward()
    alt = w.picture.alt
    assert "and 3 more" in alt and not names_what_was_freed(alt, freed_in(w.picture.text))


def test_stepper_frames_and_step_pictures_say_what_was_freed(graph):
    frames = bt.step_through(graph["d"].backward, graph["d"], names={"a": graph["a"], "b": graph["b"]})
    page = frames._repr_mimebundle_()["text/html"]
    said = alts(page)
    assert len(said) == len(frames.frames)
    assert said[2].startswith("step 2 of 5 · op2 ExpBackward0 ran. FREED by op2 ExpBackward0: ExpBackward0's result.")
    clock = bt.StepClock()
    w = torch.ones(2, requires_grad=True)
    total = 0
    for _ in range(2):
        clock.tick()
        total = total + (w * 2).sum()
    alt = bt.draw_steps(total, clock=clock).alt
    assert "Each op's box says which step made it. Step 1 made: " in alt and "Step 2 made: " in alt


def test_a_module_picture_says_what_it_holds():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 1))
    with bt.record_modules(model) as rec:
        loss = model(torch.ones(2, 3)).sum()
    alt = draw(loss, modules=rec).alt
    assert "HELD, each by the node that saved it:" in alt and "ReluBackward0's result" in alt


# ------------------------------------------------------------------------------------------
# The notebooks' committed outputs. This fails until the notebooks are regenerated with the
# pictures' new text alternatives (issue 30 §1): before that, every alt is the text form's first line.

def stepper_frames():
    """(notebook, cell id, alt, caption) of every stepper frame in the notebooks' committed outputs."""
    frame = re.compile(r'<figure class="bt-frame"[^>]*><img alt="([^"]*)"[^>]*><figcaption><pre[^>]*>(.*?)</pre>', re.S)
    for path in notebooks():
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            for o in cell.get("outputs", []):
                page = o.get("data", {}).get("text/html", "")
                page = "".join(page) if isinstance(page, list) else page
                for alt, caption in frame.findall(page):
                    yield path.name, cell.get("id"), html.unescape(alt), html.unescape(caption)


def test_every_committed_stepper_frame_that_releases_says_so_in_its_alt():
    """A frame whose caption says a saved tensor was released: its alt says FREED (this fails
    until the notebooks are regenerated: the alt was the caption's first line)."""
    bad, seen = [], 0
    for name, cid, alt, caption in stepper_frames():
        if "released after it ran: " in caption and "released after it ran: nothing" not in caption:
            seen += 1
            if "FREED by " not in alt:
                bad.append(f"{name} {cid}: {alt[:80]!r}")
    assert seen >= 5, f"only {seen} releasing frames found"
    assert not bad, "\n".join(bad)


def picture_outputs():
    for path in notebooks():
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            for o in cell.get("outputs", []):
                data = o.get("data", {})
                page = data.get("text/html", "")
                page = "".join(page) if isinstance(page, list) else page
                if DOT_MIME in data and "data:image/svg+xml" in page and "bt-stepper-static" not in page:
                    text = data.get("text/plain", "")
                    yield path.name, cell.get("id"), page, "".join(text) if isinstance(text, list) else text


def test_every_committed_freed_picture_names_what_was_freed():
    bad, seen = [], 0
    for name, cid, page, text in picture_outputs():
        freed = freed_in(text)
        if not freed:
            continue
        seen += 1
        if '<details class="bt-words">' not in page:
            bad.append(f"{name} {cid}: no full description beside the picture")
        for alt in alts(page):
            bad += [f"{name} {cid}: {why}" for why in names_what_was_freed(alt, freed)]
    assert seen >= 20, f"only {seen} FREED pictures found in the notebooks"
    assert not bad, "\n".join(bad[:30]) + f"\n({len(bad)} in all)"


def test_a_slide_keeps_the_alt_and_puts_the_description_under_the_picture(graph):
    from scripts import slides
    pic = draw(graph["d"], names=graph)
    output = {"output_type": "display_data", "data": pic._repr_mimebundle_(), "metadata": {}}
    (block,) = slides.output_blocks(output)
    assert f'alt="{html.escape(pic.alt, quote=True)}"' in block.html
    said = re.search(r'<details class="bt-words"><summary>The picture in words</summary><pre tabindex="0">(.*)</pre>'
                     r"</details>$", block.html, re.S)
    assert said and html.unescape(said.group(1)) == pic.text


def test_jupyterlab_keeps_the_figure_and_drops_aria():
    """JupyterLab's sanitizer (untrusted outputs) keeps figure, figcaption, details, summary, pre and
    img, and keeps no aria-* attribute: why the description is a <details>, not aria-describedby."""
    import pathlib
    import sys
    static = pathlib.Path(sys.prefix) / "share" / "jupyter" / "lab" / "static"
    found = [m for p in static.glob("*.js") for m in
             re.findall(r'allowedTags:\[("a","abbr".*?)\]', p.read_text(errors="ignore"))]
    if not found:
        pytest.skip("JupyterLab is not installed")
    tags = set(re.findall(r'"([a-z0-9]+)"', found[0]))
    assert {"figure", "figcaption", "details", "summary", "pre", "img"} <= tags
    allowed = [m for p in static.glob("*.js") for m in re.findall(r'"\*":\[([^\]]*)\]', p.read_text(errors="ignore"))]
    assert allowed and not any("aria" in a or "role" in a for a in allowed)
