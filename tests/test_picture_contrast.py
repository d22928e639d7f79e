"""Colour and contrast inside the pictures (issue 30 §2): every text run of every SVG picture is at
least 4.5:1 against the fill beneath it, and no meaning rests on colour alone (HELD and FREED say
so in words, each training step's boxes say 'step k', the legend has words beside its swatches).
scripts/picture_a11y.py measures; axe cannot see inside an <img>."""
import base64
import re

import nbformat
import numpy as np
import pytest
import torch

import backward_twice as bt
from backward_twice.graph import DOT_MIME, draw, watch
from backward_twice.picture import palette
from scripts import notebooks
from scripts.picture_a11y import contrast, simulate, text_contrasts

AA = 4.5


def test_the_measure_finds_the_faded_text_the_audit_found():
    assert round(contrast("#b8b8b8", "#ffffff"), 2) == 1.98
    svg = ('<svg xmlns="http://www.w3.org/2000/svg"><g><polygon fill="#eeeeee" points="0,0 100,0 100,-40 0,-40"/>'
           '<text x="5" y="-10" font-size="10" fill="#b8b8b8">faded</text></g>'
           '<text x="200" y="-10" font-size="10">on the page</text></svg>')
    (faded, bg, _), (page, page_bg, _) = [(round(r, 2), b, f) for r, _, f, b in text_contrasts(svg)]
    assert (bg, faded) == ("#eeeeee", round(contrast("#b8b8b8", "#eeeeee"), 2))
    assert page_bg == "#ffffff" and page == 21.0


def representative():
    """One picture of each kind: draw, a watch pair, after_view (faded boxes), a spotlight, a
    tensor modified in place, draw_steps, a module picture, a folded repeat, a capped graph, a
    stepper frame, a why_backward stop picture."""
    out = {}
    a = torch.tensor([1.0, 2.0], requires_grad=True)
    b = torch.tensor([3.0, 4.0], requires_grad=True)
    c = a * b
    c.retain_grad()
    d, e = c.exp().sum(), (c * 2).sum()
    n = {"a": a, "b": b, "c": c, "d": d, "e": e}
    out["draw"] = draw(d, e, names=n).svg
    with watch(d, e, names=n, title="d.backward()") as w:
        d.backward()
    out["pair"] = w.picture.svg
    out["after_view"] = w.after_view().svg
    out["spotlight"] = w.after_view(spotlight=["c"]).svg
    x = torch.ones(3, requires_grad=True)
    y = x.exp()
    z = (y * y).sum()
    y.add_(1)
    out["modified"] = draw(z, names={"x": x}).svg
    clock = bt.StepClock()
    wt = torch.ones(2, requires_grad=True)
    total = 0
    for _ in range(3):
        clock.tick()
        total = total + (wt * 2).exp().sum()
    out["steps"] = bt.draw_steps(total, clock=clock).svg
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 1))
    with bt.record_modules(model) as rec:
        loss = model(torch.ones(2, 3)).sum()
    out["modules"] = draw(loss, modules=rec).svg
    h, W = torch.zeros(2, requires_grad=True), torch.ones(2, 2, requires_grad=True)
    for _ in range(20):
        h = torch.tanh(h @ W)
    out["repeats"] = draw(h.sum(), names={"W": W}).svg
    out["capped"] = draw(h.sum(), names={"W": W}, max_nodes=10).svg
    p = torch.tensor([1.0, 2.0], requires_grad=True)
    q = (p * p).exp().sum()
    out["stepper"] = bt.step_through(q.backward, q, names={"p": p}).svg(2)
    from backward_twice.diagnosis_picture import StopRequest, stop_picture
    r = (p * 3).sum()
    out["stop"] = stop_picture(StopRequest(root=r, stop=r.grad_fn, path=(r.grad_fn,))).svg
    return out


@pytest.fixture(scope="module")
def pictures():
    return representative()


def test_every_text_run_of_every_kind_of_picture_reads_at_aa(pictures):
    bad = []
    for kind, svg in pictures.items():
        runs = text_contrasts(svg)
        assert len(runs) >= 5, f"{kind}: only {len(runs)} text runs found: the measure reads nothing"
        bad += [f"{kind}: {w!r} {fg} on {bg}: {r:.2f}:1" for r, w, fg, bg in runs if r < AA]
    assert not bad, "\n".join(bad)


def test_faded_boxes_are_told_by_their_frame_not_by_unreadable_text(pictures):
    assert palette.FADED not in {fg for _, _, fg, _ in text_contrasts(pictures["spotlight"])}
    assert palette.FADED in pictures["spotlight"]          # the pale frames
    assert palette.FADED_TEXT in {fg for _, _, fg, _ in text_contrasts(pictures["spotlight"])}


def test_no_meaning_by_colour_alone(pictures):
    words = {kind: " ".join(w for _, w, _, _ in text_contrasts(svg)) for kind, svg in pictures.items()}
    # every held saved tensor says HELD, every freed one FREED
    assert words["draw"].count("HELD") == 4              # 4 held slots
    assert "FREED" in words["pair"] and "HELD" in words["pair"]
    # every op of draw_steps says which step made it
    for k in (1, 2, 3):
        assert words["steps"].count(f"· step {k}") == 4, words["steps"]
    assert "stopped here" in words["stop"]
    # the legend says each colour's meaning in words
    assert "saved tensor held in memory" in words["draw"] and "saved tensor FREED by backward" in words["pair"]
    assert "made by step 1" in words["steps"]


def _png(svg: str, tmp_path, name: str):
    import shutil
    import subprocess
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.skip("no chromium to render the SVG")
    src, out = tmp_path / f"{name}.svg", tmp_path / f"{name}.png"
    src.write_text(svg)
    subprocess.run([chromium, "--headless", "--no-sandbox", f"--screenshot={out}", "--window-size=900,700",
                    src.as_uri()], check=True, capture_output=True, timeout=120)
    from PIL import Image
    return np.asarray(Image.open(out).convert("RGB"))


def test_simulations_keep_held_and_freed_apart_only_by_their_words(pictures, tmp_path):
    """Under protanopia and deuteranopia the HELD green and the FREED red come close (which is why
    each row says its word); greyscale keeps every text run dark enough to read."""
    held, freed = np.array([[[0x1E, 0x6B, 0x30]]], np.uint8), np.array([[[0xC0, 0x39, 0x2B]]], np.uint8)
    for kind in ("protanopia", "deuteranopia"):
        h, f = simulate(held, kind)[0, 0].astype(int), simulate(freed, kind)[0, 0].astype(int)
        assert np.abs(h - f).max() < 60, (kind, h, f)        # close: colour alone would not tell them
    img = _png(pictures["pair"], tmp_path, "pair")
    grey = simulate(img, "greyscale")
    assert (grey[..., 0] == grey[..., 1]).all() and grey.min() < 80     # the text stays dark


# ------------------------------------------------------------------------------------------
# The notebooks' committed pictures: this fails until the notebooks are regenerated with the new
# colours (faded text was #b8b8b8, 1.98:1, in 19 pictures).

def committed_svgs():
    for path in notebooks():
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            for o in cell.get("outputs", []):
                data = o.get("data", {})
                if DOT_MIME not in data:
                    continue
                page = data.get("text/html", "")
                page = "".join(page) if isinstance(page, list) else page
                for m in re.finditer(r"data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)", page):
                    yield path.name, cell.get("id"), base64.b64decode(m.group(1)).decode()


def test_every_committed_picture_reads_at_aa():
    bad, seen = [], 0
    for name, cid, svg in committed_svgs():
        seen += 1
        low = [(r, w) for r, w, _, _ in text_contrasts(svg) if r < AA]
        if low:
            bad.append(f"{name} {cid}: {len(low)} text run(s) below {AA}:1, e.g. {low[0][1]!r} {low[0][0]:.2f}:1")
    assert seen >= 80, f"only {seen} pictures found"
    assert not bad, "\n".join(bad)
