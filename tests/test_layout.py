"""backward_twice.layout: every picture is laid out under a time limit (issue 18 §4, "bounded layout").
No timing is asserted: which path a source takes is decided by its measured cost, and the
time limit is tested by making it tiny."""
import pytest
import torch

from backward_twice import layout, render
from backward_twice.graph import draw
from backward_twice.picture.figure import Picture
from backward_twice.picture.text_form import describe
from backward_twice.walk import snapshot


def op_by_op(loss, names):
    """The picture of every op (draw() folds the repeated steps of these loops into one box)."""
    snap = snapshot(loss, names=names)
    pic = Picture(render.to_dot(snap), describe(snap))
    pic.held_to_rule = False      # this picture, as laid out (refused, simplified): not a fallback (issue 28)
    return pic


def attention(steps, d=4, window=None):
    """Attention over every earlier state (or the last `window`): a = softmax(h @ H.T); h = tanh((a @ H) @ w)."""
    torch.manual_seed(0)
    w = torch.randn(d, d, requires_grad=True)
    h = torch.randn(1, d, requires_grad=True)
    states = [h]
    for _ in range(steps):
        H = torch.cat(states if window is None else states[-window:])
        a = torch.softmax(h @ H.T, dim=-1)
        h = torch.tanh((a @ H) @ w)
        states.append(h)
    return h.sum(), {"w": w}


def test_measure_counts_boxes_arrows_and_skipped_ranks():
    # a -> b -> c and a -> c: c one rank below b, a above b; the arrow a -> c skips b's rank
    cost = layout.measure('digraph {\n\ta -> b\n\tb -> c\n\ta -> c [color=red]\n\t"x y" -> c\n}')
    assert (cost.nodes, cost.edges, cost.bends) == (4, 4, 1)
    assert layout.measure("digraph { a }").total == 0


def test_attention_over_40_steps_is_refused_in_advance_and_says_why(monkeypatch):
    loss, names = attention(40)
    pic = op_by_op(loss, names)
    cost = layout.measure(pic.dot)
    assert cost.total > layout.REFUSE_COST       # froze the kernel for minutes, in-process
    def never(*a, **k):
        raise AssertionError("a refused source must not be laid out")
    monkeypatch.setattr(layout, "_in_process", never)
    monkeypatch.setattr(layout, "_child", never)
    assert "PICTURE NOT DRAWN" in pic.text and "focus=" in pic.text   # the text form says it
    assert "PICTURE NOT DRAWN" in pic.svg and "<svg" in pic.svg       # and the picture
    with pytest.raises(layout.LayoutRefused, match="more than 5 s"):
        layout.laid_out(pic.dot, "plain")


def test_a_medium_graph_is_simplified_in_a_child_process(monkeypatch):
    loss, names = attention(13)
    pic = op_by_op(loss, names)
    assert layout.IN_PROCESS_COST < layout.measure(pic.dot).total <= layout.REFUSE_COST
    assert "PICTURE SIMPLIFIED" in pic.text
    monkeypatch.setattr(layout, "_in_process", lambda *a: pytest.fail("laid out in-process"))
    svg = layout.laid_out(pic.dot, prog="pygraphviz")
    assert svg.count("<g id=\"node") == layout.measure(pic.dot).nodes   # every box drawn


def test_a_layout_that_runs_out_of_time_is_stopped_and_says_so(monkeypatch):
    loss, names = attention(13)
    monkeypatch.setattr(layout, "TIMEOUT_S", 0.01)     # the child cannot even start in that time
    dot = op_by_op(loss, names).dot
    with pytest.raises(layout.LayoutRefused, match=r"did not lay out .* within 0.01 s \(stopped\)"):
        layout.laid_out(dot, "plain", prog="pygraphviz")
    svg = layout.laid_out(dot, prog="pygraphviz")
    assert "<svg" in svg and "(stopped)" in svg and "PICTURE NOT DRAWN" in svg


def test_the_common_case_stays_in_process(monkeypatch):
    x = torch.randn(3, requires_grad=True)
    pic = draw((x * x).sum())
    assert layout.measure(pic.dot).total <= layout.IN_PROCESS_COST
    assert layout.note(pic.dot) is None and "PICTURE" not in pic.text
    monkeypatch.setattr(layout, "_child", lambda *a: pytest.fail("a child process for a small picture"))
    assert "<svg" in layout.laid_out(pic.dot, prog="pygraphviz")


def test_draw_folds_the_attention_loop_and_lays_it_out_in_process():
    # engine-scene: 40 identical steps (attention over the last 4 states: the same shapes each step)
    # are one drawn step and one 'xN' box: cheap and readable
    loss, names = attention(40, window=4)
    pic = draw(loss, names=names)
    assert layout.measure(pic.dot).total <= layout.IN_PROCESS_COST and "more of the block below" in pic.dot
    assert "PICTURE" not in pic.text and "picture: folded:" in pic.text
    # over every earlier state, H grows a row each step: the same ops, other shapes, never folded
    # (issue 28: identical means the same ops and shapes)
    from backward_twice.picture import repeats
    from backward_twice.walk import snapshot
    assert repeats.fold(snapshot(attention(40)[0], max_nodes=5000)) is None


def test_an_svgs_size_is_read_by_one_regex_in_one_place():
    """issue 18 §2: one function reads an SVG's size; stack_svgs reads the head it rewrites with it."""
    import pathlib
    import re

    from backward_twice.picture import layout as picture_layout

    root = pathlib.Path(picture_layout.__file__).parents[1]
    readers = [f"{p.relative_to(root)}:{i}" for p in sorted(root.rglob("*.py"))
               for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
               if re.search(r"""re\.(compile|search|match|findall)\(r?['"][^'"]*<svg[^'"]*width=""", line)]
    assert readers == [f"picture/layout.py:{_line_of(picture_layout, '_SVG_HEAD = ')}"], readers
    a = '<svg width="100pt" height="40pt"\n viewBox="0.00 0.00 100.00 40.00" xmlns="x"><g/></svg>'
    b = '<svg width="250pt" height="60pt"\n viewBox="0.00 0.00 250.00 60.00" xmlns="x"><g/></svg>'
    stacked = picture_layout.stack_svgs([a, b], gap_pt=12.0)
    assert picture_layout.svg_size(a) == (100.0, 40.0)
    assert picture_layout.svg_size(stacked) == (250.0, 112.0)
    assert 'viewBox="0.00 0.00 250.00 60.00"' in stacked and 'y="52.00"' in stacked


def _line_of(module, text: str) -> int:
    import inspect

    return next(i for i, line in enumerate(inspect.getsource(module).splitlines(), 1) if line.startswith(text))


def dense_by_concatenation(layers, d=4):
    """DenseNet style: each layer reads every earlier output, concatenated: h = lin(cat(outs))."""
    torch.manual_seed(0)
    outs = [torch.randn(1, d)]
    for _ in range(layers):
        lin = torch.nn.Linear(d * len(outs), d)
        outs.append(torch.relu(lin(torch.cat(outs, dim=1))))
    return outs[-1].sum()


def test_a_refused_picture_does_not_read_so_a_simpler_one_is_drawn():
    # 40 layers: the whole graph (cost 30,581) is refused; its small note used to count as a
    # picture that reads, so draw() showed the refusal instead of trying fewer nodes
    from backward_twice.picture.layout import refused

    pic = draw(dense_by_concatenation(40))
    assert layout.measure(pic.dot).total > layout.REFUSE_COST
    svg = pic.svg
    assert not refused(svg) and pic.simplified > 0 and "drawn up to" in pic.dot
    assert "PICTURE NOT DRAWN" not in pic.text
    assert f"picture: simplified to read at notebook width (simpler picture {pic.simplified})" in pic.text
    assert refused(layout.refused_svg("why")) and not refused(svg)


def test_the_text_describes_the_simpler_picture_drawn_not_the_first_one():
    # 20 layers: the whole graph's layout would be simplified (cost 3,691); a cut is drawn
    # instead, laid out as drawn: its text says so, and not the whole graph's layout note
    pic = draw(dense_by_concatenation(20))
    first = layout.note(pic.dot)
    assert first is not None and first.startswith("PICTURE SIMPLIFIED")
    text = pic.text                     # lays out: which picture is drawn decides what it says
    assert pic.simplified > 0 and layout.note(pic.dot) is None
    assert "PICTURE SIMPLIFIED" not in text and "fewer nodes are drawn than listed above" in text
    assert pic._repr_mimebundle_()["text/plain"] == text


@pytest.mark.parametrize("steps", [3, 8, 12, 16, 40])
def test_a_picture_told_too_tall_from_its_ranks_is_too_tall_once_laid_out(steps):
    """figure.cannot_fit skips the layout of a picture whose chain of arrows is too long to fit
    (issue 28 §4: fewer layouts tried). It must never skip one that would fit: whenever it says
    "cannot fit", the laid-out picture indeed breaks layout.fits; and short chains are laid out."""
    from backward_twice.picture.figure import cannot_fit
    from backward_twice.picture.layout import fits, svg_from_dot

    x = torch.randn(2, requires_grad=True)
    y = x
    for _ in range(steps):
        y = torch.tanh(y)
    dot = render.to_dot(snapshot(y.sum(), names={"x": x}))
    ranks = layout.measure(dot).ranks
    assert ranks == steps + 3          # x, AccumulateGrad, the tanh ops, sum
    predicted = cannot_fit(dot)
    if predicted:
        assert not fits(svg_from_dot(dot))
    assert predicted == (ranks >= 25)      # what the bound says at the house fonts (largest 14 pt)


def test_a_module_picture_too_many_ranks_op_by_op_still_draws_its_overview():
    """The rank bound skips the layout of a picture that draws its one DOT; a module picture whose
    op-by-op form has too many ranks may still fit as its overview (one box per call), so it is
    laid out and chooses, as before (a case test_fuzz_renderer found)."""
    from torch import nn

    from backward_twice.modules import record_modules
    from backward_twice.picture.figure import cannot_fit

    torch.manual_seed(0)

    def block():
        return nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 4), nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 4)),
                             nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 4), nn.Linear(4, 4)))
    net = nn.Sequential(block(), block(), block())
    x = torch.randn(3, 4, requires_grad=True)
    with record_modules(net):
        out = net(x)
    pic = draw(out.pow(2).sum(), modules=net)
    assert cannot_fit(pic.dot)                 # op by op: too many ranks to fit
    _ = pic.svg
    assert pic.form == "calls" and pic.simplified == 0
