"""backward_twice.render: DOT from a Snapshot (byte for byte what graphviz's own calls write), HTML
escaping, bounded layout, and SVG with or without a system `dot`."""
import html
import os
import re
import subprocess
import sys

import pytest
import torch
from autograd_programs import cat_car, node_places, seed_graph, two_losses
from hypothesis import given, settings
from hypothesis import strategies as st

from backward_twice import render
from backward_twice.graph import draw
from backward_twice.picture.layout import fits
from backward_twice.walk import snapshot


def _graphs():
    a = torch.tensor([[1.0, 2.0, 3.0, 4.0]], requires_grad=True)
    b = a ** 2
    c = b * 2
    d, e = c.mean(), c.sum()
    yield snapshot(d, e, names={"a": a, "b": b, "c": c, "d": d, "e": e, 'q"<{x}>&': a})
    d.backward()
    yield snapshot(d, e, names={"a": a, "c": c})
    y = torch.ones(2, requires_grad=True)
    for _ in range(30):
        y = torch.tanh(y * 1.5)
    yield snapshot(y, max_nodes=12)


def test_the_dot_writer_writes_every_box_and_edge_of_the_scene():
    """DOT is written from the scene alone (backward_twice.picture.dot_writer): Graphviz reads back
    exactly the scene's boxes and edges, ids prefixed for a half of a pair, user text escaped."""
    import pygraphviz

    from backward_twice.picture import dot_writer
    from backward_twice.picture.build import scene_of

    for snap in _graphs():
        for prefix in ("", "L_"):
            scene = scene_of(snap, highlight=("op1",), legend=False)
            source = dot_writer.header() + "".join(dot_writer.body(scene, prefix)) + "}\n"
            g = pygraphviz.AGraph(string=source)
            assert set(g.nodes()) == {prefix + b for b in scene.boxes}
            assert sorted(g.edges()) == sorted((prefix + e.tail, prefix + e.head) for e in scene.edges)
            assert ("op1" in snap.ops) == (render.HIGHLIGHT in source)


@settings(max_examples=200, derandomize=True, database=None)
@given(st.text())
def test_escape_matches_html_escape_plus_braces(text):
    # no-break space, times and ellipsis as character references: the same glyphs, plain ASCII DOT
    want = html.escape(text, quote=True).replace("{", "&#123;").replace("}", "&#125;").replace("\\", "\\\\")
    for char, ref in (("\xa0", "&#160;"), ("\u00d7", "&#215;"), ("\u2026", "&#8230;")):
        want = want.replace(char, ref)
    assert render.esc(text) == want


def test_layout_iterations_are_bounded():
    # Graphviz's network simplex ran unbounded: a weight shared by 100 layers (tanh(y @ w))
    # took minutes to lay out at 300 nodes, a kernel frozen meanwhile. nslimit/nslimit1
    # bound it; small pictures lay out identically.
    x, w = torch.ones(1, 4, requires_grad=True), torch.ones(4, 4, requires_grad=True)
    y = torch.tanh(x @ w)
    dot = draw(y).dot
    assert "nslimit=2" in dot and "nslimit1=2" in dot


# ---------------------------------------------------------------- engines
def test_renders_with_no_dot_on_path(tmp_path):
    """Fresh interpreter, PATH without any `dot`: the bundled engine draws, nothing leaks to stderr."""
    code = ("import torch; from backward_twice.graph import draw\n"
            "a = torch.ones(2, requires_grad=True); s = draw((a * a).sum(), names={'a': a}).svg\n"
            "from backward_twice import render\n"
            "print(render.engine(), '<svg' in s, 'PowBackward0' in s or 'MulBackward0' in s)\n")
    env = dict(os.environ, PATH=str(tmp_path))
    env.pop("BACKWARD_TWICE_ENGINE", None)
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["pygraphviz", "True", "True"]
    assert done.stderr == ""  # the bundled fontconfig warning is silenced


def test_uses_dot_when_on_path_with_same_picture(tmp_path, monkeypatch):
    """With a `dot` on PATH the renderer calls it; the picture has the same nodes and labels.

    The `dot` here is a stand-in that logs its call and lays out with the bundled engine,
    so the test runs on machines without Graphviz (like CI) instead of being skipped.
    """
    log = tmp_path / "called"
    fake = tmp_path / "dot"
    fake.write_text(f"#!{sys.executable}\n"
                    "import sys, pathlib, pygraphviz\n"
                    f"pathlib.Path({str(log)!r}).write_text(' '.join(sys.argv[1:]))\n"
                    "sys.stdout.write(pygraphviz.AGraph(string=sys.stdin.read()).draw(format='svg', prog='dot').decode())\n")
    fake.chmod(0o755)
    monkeypatch.delenv("BACKWARD_TWICE_ENGINE", raising=False)
    t = seed_graph()
    pic = draw(t["d"], t["e"], names=t)
    monkeypatch.setenv("PATH", str(tmp_path) + os.pathsep + os.environ["PATH"])
    via_dot = pic.svg
    assert log.read_text() == "-Tsvg"
    pic._svg = None
    monkeypatch.setenv("BACKWARD_TWICE_ENGINE", "pygraphviz")
    in_process = pic.svg
    assert via_dot.count('class="node"') == in_process.count('class="node"') == 9
    for word in ("PowBackward0", "MulBackward0", "HELD", "self", "other"):
        assert word in via_dot and word in in_process


def test_every_tensor_box_says_what_its_grad_is():
    """Leaf: 'grad: <value>'; retained non-leaf: 'retains grad: <value>'; other non-leaf:
    'grad: not kept (non-leaf)', so each box answers 'where is my .grad?' the same way."""
    a = torch.tensor([1.0, 2.0], requires_grad=True)
    h = a * 3
    h.retain_grad()
    b = h.exp()
    out = b.sum()
    out.backward(retain_graph=True)
    dot = draw(out, names={"a": a, "h": h, "b": b, "out": out}).dot
    rows = re.findall(r"(?:retains )?grad: [^<]*", dot)
    # a.grad = 3 e^(3a) = [60.26, 1210]; h.grad = e^h = [20.09, 403.4]: each to the resolution of the
    # largest value's 3 significant digits (60.26 beside 1210 is a fact to the nearest 10)
    assert rows == ["grad: [60, 1210]", "retains grad: [20, 403]"] + ["grad: not kept (non-leaf)"] * 2


# ------------------------------------------------------------------ real-model scale
def _rnn(steps):
    torch.manual_seed(0)
    cell = torch.nn.RNNCell(3, 4)
    h = torch.zeros(1, 4)
    for _ in range(steps):
        h = cell(torch.randn(1, 3), h)
    return h.sum(), dict(cell.named_parameters())


def test_a_leaf_used_far_below_its_first_use_is_a_reference_box():
    loss, names = _rnn(6)
    snap = snapshot(loss, names=names)
    far = render.far_leaf_uses(snap)
    leaf_of = {t.name: t.id for t in snap.tensors.values()}
    # each weight: one box with a real edge to its use(s) near the top, a reference per later step
    for name in names:
        mine = [op for leaf, op in far if leaf == leaf_of[name]]
        assert len(mine) == 5, name
    dot = render.to_dot(snap)
    assert dot.count("same leaf</FONT>") == len(far) == 20
    assert dot.count("<B>weight_hh</B>") == 1 + 5        # the box once, five references
    levels = render.op_levels(snap)
    for leaf, op in far:                                   # no long edge left from a leaf
        assert f"\t{leaf} -> {op}\n" not in dot
    kept = [(a, b) for a, b in snap.edges if a in snap.tensors and (a, b) not in far]
    tops = {a: max(levels[b] for x, b in snap.edges if x == a) for a, _ in kept}
    assert all(tops[a] - levels[b] <= render.FAR_RANKS for a, b in kept)
    assert render.far_leaf_uses(snapshot(*_graphs_first())) == set()   # small graphs: real edges


def _graphs_first():
    a = torch.tensor([1.0, 2.0], requires_grad=True)
    return ((a * 2).sum() + (a * 3).sum() + a.exp().sum(),)


def test_every_picture_has_a_legend_of_the_marks_it_uses():
    names = seed_graph()
    d, e = names["d"], names["e"]
    dot = draw(d, e, names=names).dot
    assert "leaf tensor, with its .grad" in dot and "saved tensor held in memory" in dot
    assert "FREED" not in dot.split("label=<<TABLE BORDER=\"0\"")[-1]     # nothing freed: no entry
    d.backward()
    after = draw(d, e, names=names).dot
    assert "saved tensor FREED by backward" in after
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    z = (y * y).sum()
    y.add_(1)
    assert "saved, then modified in place" in draw(z, names={"x": x, "y": y}).dot
    assert "the node running in this step" in render.to_dot(snapshot(z), highlight=("op1",))


def test_watch_marks_the_nodes_backward_ran_in_order():
    from backward_twice.graph import watch

    names = seed_graph()
    d, e = names["d"], names["e"]
    with watch(d, e, names=names, label="d.backward()") as w:
        d.backward()
    ran = w.picture.ran
    names_of = {op.id: op.name for op in w.after.ops.values()}
    order = sorted(ran, key=lambda i: ran[i])
    assert [names_of.get(i, "leaf") for i in order] == ["MeanBackward0", "MulBackward0", "PowBackward0", "leaf"]
    assert "SumBackward0" not in [names_of[i] for i in ran if i in names_of]   # e's own node did not run
    assert "ran #1" in w.picture.dot and "ran #4" in w.picture.dot
    assert "backward ran 4 node(s), in this order: op1 MeanBackward0, op3 MulBackward0, " \
           "op4 PowBackward0, AccumulateGrad of a" in w.picture.text


def test_a_pair_too_wide_side_by_side_is_stacked():
    from backward_twice.graph import READABLE_WIDTH_PT, compare, svg_width_pt

    torch.manual_seed(0)
    xs = [torch.randn(3, requires_grad=True) for _ in range(4)]
    loss = sum((x.exp() * x.sin()).sum() for x in xs)
    names = {f"x{i}": x for i, x in enumerate(xs)}
    before = snapshot(loss, names=names)
    loss.backward()
    pic = compare(before, snapshot(loss, names=names))
    held = compare(before, snapshot(loss, names=names))
    assert fits(held.svg)                      # issue 28: the default pair fits 11 px and 900 px
    pic.held_to_rule = False                   # the pair's own choice: side by side or stacked
    side = render.svg_from_dot(render.pair_dot(before, pic.after))
    assert svg_width_pt(side) > READABLE_WIDTH_PT                 # side by side: unreadable
    assert svg_width_pt(pic.svg) < svg_width_pt(side) and pic.stacked
    assert pic.dot == "\n".join(pic.alternative) and pic.svg.count("<svg") == 4   # before, after, legend
    widths = [svg_width_pt(render.svg_from_dot(d)) for d in pic.alternative]
    assert svg_width_pt(pic.svg) == pytest.approx(max(widths), abs=1)
    assert "ran #k" not in pic.alternative[1] and "saved tensor FREED by backward" in pic.alternative[2]
    small = compare(*_seed_pair())      # side by side 808 pt wide: its text 10.6 px, under 11
    small.held_to_rule = False
    assert svg_width_pt(small.svg) <= READABLE_WIDTH_PT and small.stacked and fits(small.svg)


def _seed_pair():
    names = seed_graph()
    d, e = names["d"], names["e"]
    before = snapshot(d, e, names=names)
    d.backward()
    return before, snapshot(d, e, names=names)


def test_pictures_cap_gradients_and_drop_size_bookkeeping():
    assert render.short_values("[1, 2, 3, 4, 5, 6] (2, 3)") == "[1, 2, 3, ...] (2, 3)"
    assert render.short_values("[1, 2, 3]") == "[1, 2, 3]"
    # three significant digits in a picture (the text form keeps four); complex values as they are
    assert render.short_values("[0.03659, -0.0008713, 1.119e-05]") == "[0.0366, -0.000871, 1.12e-05]"
    assert render.short_values("[2+4j, 6-2j]") == "[2+4j, 6-2j]"
    assert render.short_values("(8, 8) norm 3.2") == "(8, 8) norm 3.2"
    x = torch.arange(6.0, requires_grad=True)
    loss = (x * 2).sum()
    loss.backward()
    pic = draw(loss, names={"x": x})
    assert "grad: [2, 2, 2, ...]" in pic.dot and "grad=[2, 2, 2, 2, 2, 2]" in pic.text
    assert "size value" not in pic.dot and "self_sym_sizes" in pic.text


def test_one_buffer_saved_by_two_slots_is_said_and_counted_once():
    from backward_twice.graph import watch

    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 2
    loss = (y * y).sum()           # MulBackward0 saves y as self and as other: one buffer
    with watch(loss, names={"x": x, "y": y, "loss": loss}) as w:
        loss.backward()
    snap = w.before
    (slots,) = snap.shared_buffers().values()
    assert sorted(s.slot for _, s in slots) == ["other", "self"]
    assert snap.bytes_by_state()["held"] == 32 and snap.unique_bytes_by_state()["held"] == 20   # 12 + 8
    assert "shared buffers: 1 buffer(s) saved by 2 slots; counted once: 20 B held, 0 B freed" in w.picture.text
    assert "shared buffers: 1 buffer(s) saved by 2 slots; counted once: 0 B held, 20 B freed" in w.picture.text
    assert "freed 3 saved tensor(s), 20 B:" in w.picture.text
    pair = render.pair_dot(w.before, w.after)            # (the default picture of this pair: 828 pt side by
    assert pair.count("<I>shared buffer</I>") == 4        # side, 10.4 px; stacked 1,035 px tall: 'after' only)
    assert "grey text: details - shared buffer (counted once)" in pair      # the legend's one grey entry
    e = x.exp()                    # ExpBackward0 saves its result, and the product saves it again
    assert len(snapshot(e * x).shared_buffers()) == 1
    z = (x * torch.ones(3, requires_grad=True)).sum()    # two different tensors: nothing said
    assert not snapshot(z).shared_buffers() and "shared buffer" not in draw(z).dot + draw(z).text


def test_the_box_whose_grad_changed_is_marked():
    from backward_twice.graph import watch

    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    w_ = torch.tensor([1.0, 1.0, 1.0], requires_grad=True)
    y = x * 2
    y.retain_grad()
    loss = (y * y).sum() + (w_.detach() * 0).sum()
    with watch(loss, names={"x": x, "y": y, "w": w_, "loss": loss}) as w:
        loss.backward()
    mark = f'<FONT COLOR="{render.CHANGED}"><B>'
    assert w.picture.dot.count(mark) == 2 and ".grad changed by this call" in w.picture.dot
    right = w.picture.dot.split("cluster_R")[1]
    assert re.search(r"<B>x</B>.*?" + re.escape(mark) + r"\[8, 16, 24\]", right)
    assert mark not in w.picture.dot.split("cluster_R")[0]                 # before: nothing changed


# ------------------------------------------------------------------ same size, same place
def _halves(places):
    left = {k[2:]: v for k, v in places.items() if k.startswith("L_")}
    right = {k[2:]: v for k, v in places.items() if k.startswith("R_")}
    return left, right


def _pair_places(before, after, marks, sizes):
    """(side by side: left and right {node: place in its cluster}, stacked: top and bottom
    {node: place in its picture})."""
    side = _halves(node_places(render.pair_dot(before, after, marks=marks, sizes=sizes)))
    top, bottom, _ = render.stacked_dots(before, after, marks=marks, sizes=sizes)
    return side, (node_places(top), node_places(bottom))


def _moved(a, b):
    return sorted(k for k in a if k in b and a[k] != b[k])


def test_a_pair_draws_each_node_in_the_same_place_before_and_after():
    """Notebook 02 after loss_car.backward(): FREED marks, new grads and 'ran #k' badges change
    the sizes of the boxes of 'after'. Each box is drawn at its larger size in both halves, so
    every node keeps its place, side by side (in its cluster) and stacked (in its picture)."""
    from backward_twice.graph import watch

    loss_cat, loss_car, names = cat_car()
    with watch(loss_cat, loss_car, names=names, label="loss_car.backward()") as w:
        loss_car.backward()
    marks = render.Marks(ran=w.picture.ran)
    sizes = render.pair_sizes(w.before, w.after, ("before", "after"), marks)
    drawn = set(w.before.ops) - set(render.folded_transposes(w.before)) | set(w.before.tensors)
    assert drawn | {"title"} == set(sizes) and len(drawn) == 18
    (left, right), (top, bottom) = _pair_places(w.before, w.after, marks, sizes)
    assert set(left) == set(right) == set(top) == set(bottom) == drawn
    assert _moved(left, right) == [] and _moved(top, bottom) == []
    # without shared sizes the same pair moves: the test above can fail
    (left, right), (top, bottom) = _pair_places(w.before, w.after, marks, None)
    assert len(_moved(left, right)) > 5 and len(_moved(top, bottom)) > 5
    # what the notebook draws is the pair with shared sizes
    for dot in (w.picture.dot, *w.picture.alternative[:2]):
        assert f'WIDTH="{sizes["op1"][0]}" HEIGHT="{sizes["op1"][1]}"' in dot


def test_a_pair_of_two_different_graphs_keeps_its_own_sizes():
    """compare() of two different graphs: a node id that names another op is not resized."""
    a = torch.tensor([1.0, 2.0], requires_grad=True)
    one, two = snapshot(a.exp().sum()), snapshot((a * 3).sum())
    sizes = render.pair_sizes(one, two)
    assert one.ops["op2"].name != two.ops["op2"].name and "op2" not in sizes
    assert "op1" in sizes and "leaf1" in sizes        # SumBackward0 and a: the same in both


def test_03_pair_after_loss2_keeps_its_layout():
    """Notebook 03's two-loss example after loss2.backward() (W's grad grows, the trunk frees)."""
    from backward_twice.graph import watch

    loss1, loss2, names = two_losses()
    with watch(loss1, loss2, names=names, label="loss2.backward()") as w:
        loss2.backward()
    marks = render.Marks(ran=w.picture.ran)
    sizes = render.pair_sizes(w.before, w.after, marks=marks)
    (left, right), (top, bottom) = _pair_places(w.before, w.after, marks, sizes)
    assert len(left) == 11 and _moved(left, right) == [] and _moved(top, bottom) == []
    (left, right), (top, bottom) = _pair_places(w.before, w.after, marks, None)
    assert _moved(left, right) and _moved(top, bottom)


def test_box_sizes_are_the_largest_and_stretch_the_name_row():
    names = seed_graph()
    before = snapshot(names["d"], names["e"], names=names)
    names["d"].backward()
    after = snapshot(names["d"], names["e"], names=names)
    each = [render.box_sizes([(s, render.NO_MARKS)]) for s in (before, after)]
    both = render.box_sizes([(before, render.NO_MARKS), (after, render.NO_MARKS)])
    for nid in both:
        assert both[nid] == tuple(max(e[nid][i] for e in each) for i in (0, 1))
    assert each[0]["op4"][0] < each[1]["op4"][0]          # PowBackward0 FREED: wider after
    from backward_twice.picture import dot_writer, shared_sizes
    from backward_twice.picture.build import scene_of

    scene = scene_of(after, marks=render.Marks(ran={"op4": (1,)}), legend=False)
    shared_sizes.apply(scene, {"op4": (120, 40)})
    line = dot_writer.label(scene.boxes["op4"])
    assert '<TABLE WIDTH="120" HEIGHT="40" BORDER="2"' in line and '<TD WIDTH="116" BGCOLOR=' in line


def test_same_places_with_a_system_dot(tmp_path, monkeypatch):
    """The sizes are measured, and the pictures laid out, by the `dot` program when one is on
    PATH: the shared sizes go through its -Tplain output (here a stand-in `dot` that passes the
    format on to the bundled engine, as CI has no Graphviz; a real dot 2.43 gave the same)."""
    log = tmp_path / "calls"
    fake = tmp_path / "dot"
    fake.write_text(f"#!{sys.executable}\n"
                    "import sys, pathlib, pygraphviz\n"
                    f"with open({str(log)!r}, 'a') as f: f.write(' '.join(sys.argv[1:]) + chr(10))\n"
                    "fmt = sys.argv[1][2:]\n"
                    "sys.stdout.write(pygraphviz.AGraph(string=sys.stdin.read()).draw(format=fmt, prog='dot').decode())\n")
    fake.chmod(0o755)
    monkeypatch.delenv("BACKWARD_TWICE_ENGINE", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path) + os.pathsep + os.environ["PATH"])
    assert render.engine() == "dot"
    before, after = _seed_pair()
    sizes = render.pair_sizes(before, after)
    assert log.read_text().split() == ["-Tplain"] and sizes["op4"][0] > 0
    (left, right), (top, bottom) = _pair_places(before, after, render.NO_MARKS, sizes)
    assert left and _moved(left, right) == [] and _moved(top, bottom) == []


# ------------------------------------------------------------------ folded transposes
def _linear():
    torch.manual_seed(0)
    lin = torch.nn.Linear(3, 2)
    x = torch.randn(4, 3)
    return lin, lin(x).pow(2).sum()


def test_a_linear_weights_transpose_is_an_edge_marked_T():
    lin, loss = _linear()
    names = dict(lin.named_parameters())
    snap = snapshot(loss, names=names)
    ((t, (leaf, user)),) = render.folded_transposes(snap).items()
    assert snap.ops[t].name == "TBackward0" and snap.tensors[leaf].name == "weight"
    assert snap.ops[user].name == "AddmmBackward0"
    pic = draw(loss, names=names)
    assert "TBackward0</B>" not in pic.dot and "TBackward0" in pic.text     # the text keeps it
    assert re.search(rf"\t{leaf} -> {user} \[[^\n]*xlabel=<<B>\.T</B>>", pic.dot)   # attributes sorted
    assert f"\t{leaf} -> {t}" not in pic.dot and f"\t{t} -> {user}" not in pic.dot
    assert ".T: used transposed (TBackward0)" in pic.dot
    assert pic.svg.count('class="node"') == len(snap.ops) - 1 + len(snap.tensors)
    assert "TBackward0</B>" in render.to_dot(snap, fold=False)


def test_a_transpose_that_ran_says_its_order():
    from backward_twice.graph import watch

    lin, loss = _linear()
    names = dict(lin.named_parameters())
    with watch(loss, names=names) as w:
        loss.backward()
    (t,) = render.folded_transposes(w.after)
    (k,) = w.picture.ran[t]
    right = w.picture.dot.split("cluster_R")[1]
    assert f"<B>.T #{k}</B>" in right and f'color="{render.RAN}"' in right
    assert f"<B>.T #{k}</B>" not in w.picture.dot.split("cluster_R")[0]   # before: nothing ran


def test_only_a_plain_transpose_is_folded():
    w = torch.ones(2, 3, requires_grad=True)
    x = torch.ones(4, 3)
    assert len(render.folded_transposes(snapshot((x @ w.t()).sum()))) == 1
    wt = w.t()
    assert not render.folded_transposes(snapshot((x @ wt).sum(), names={"wt": wt}))   # named: a box
    assert not render.folded_transposes(snapshot((x @ wt).sum() + wt.sum()))        # two users
    assert not render.folded_transposes(snapshot(w.t()))                            # no user
    # of an op's output too (a Gram matrix f @ f.t()): the edge from that op, marked .T
    f = w * 2
    snap = snapshot((f @ f.t()).sum())
    ((t, (src, user)),) = render.folded_transposes(snap).items()
    assert snap.ops[t].name == "TBackward0" and snap.ops[src].name == "MulBackward0" and snap.ops[user].name == "MmBackward0"
    dot = draw((f @ f.t()).sum()).dot
    assert "TBackward0</B>" not in dot and dot.count(" xlabel=<<B>.T</B>>") == 1


def test_a_pair_whose_text_is_under_11_px_side_by_side_is_stacked_and_shown_smaller():
    """Notebook 01's first pair: with 'before' boxes as wide as 'after' ones it is 892 pt side by
    side, over 860 pt: its smallest text (10 pt) would be 9.6 px at 860 px, under the rule's 11 px
    (issue 28). Stacked, it is too tall as drawn, but its text is 13.3 px: shown smaller than drawn
    (layout.at_shown_size), whole, before above after, not simplified."""
    from backward_twice.graph import smallest_text_px, svg_width_pt, watch

    torch.manual_seed(0)
    a = torch.rand(1, 4, requires_grad=True)
    b = a ** 2
    c = b * 2
    d, e = c.mean(), c.sum()
    with watch(d, e, names={"a": a, "b": b, "c": c, "d": d, "e": e}, label="d.backward()") as w:
        d.backward()
    side = render.svg_from_dot(render.pair_dot(w.before, w.after, w.picture.titles, w.picture._marks))
    assert smallest_text_px(side) < 11                   # side by side: under the rule
    svg = w.picture.svg
    assert fits(svg) and not w.picture.simplified and w.picture.stacked
    drawn = float(re.search(r'viewBox="[\d.]+ [\d.]+ ([\d.]+)', svg).group(1))
    assert svg_width_pt(svg) < drawn and smallest_text_px(svg) >= 11


# ---- issue 20 §4: a core path's after view reads at 11 px and is at most 900 px tall ----------
def _style_losses():
    """Notebook 07 §3's pattern: losses on one conv stack (a Gram matrix each for style, at four
    depths), backwarded one at a time; the after view of the first is too tall for a core path, even
    shown smaller than drawn (its text would be under 11 px)."""
    import torch.nn.functional as F
    torch.manual_seed(0)
    convs = [torch.nn.Conv2d(3, 4, 3, padding=1), *(torch.nn.Conv2d(4, 4, 3, padding=1) for _ in range(3))]
    for conv in convs:
        for p in conv.parameters():
            p.requires_grad_(False)

    def gram(x):
        f = x.view(x.shape[1], -1)
        return f @ f.t() / f.numel()

    image = torch.rand(1, 3, 8, 8, requires_grad=True)
    hs = [convs[0](image)]
    for conv in convs[1:]:
        hs.append(conv(F.relu(hs[-1])))
    losses = {f"style{k}": F.mse_loss(gram(h), torch.zeros(4, 4)) for k, h in enumerate(hs, 1)}
    losses["content4"] = F.mse_loss(hs[-1], torch.zeros_like(hs[-1]))
    return image, losses


def test_a_too_tall_after_view_draws_the_changed_region_and_counts_the_rest():
    from backward_twice.graph import watch
    from backward_twice.picture.layout import CORE_MAX_HEIGHT_PX, CORE_TEXT_PX, reads_at, shown_px
    image, losses = _style_losses()
    with watch(*losses.values(), names={"image": image, **losses}, title="style1.backward()") as w:
        losses["style1"].backward()
    full = render.to_dot(w.after, "x", marks=render.Marks(ran=w.picture.ran, spotlight=frozenset(w.picture.ran)))
    assert shown_px(render.svg_from_dot(full))[1] > CORE_MAX_HEIGHT_PX          # the whole graph: too tall
    view = w.after_view()
    assert "what changed, and its neighbours" in view.text.splitlines()[0]
    assert shown_px(view.svg)[1] <= CORE_MAX_HEIGHT_PX and reads_at(view.svg, CORE_TEXT_PX)
    drawn = set(re.findall(r"^\t+(op\d+|leaf\d+|t_op\d+_\d+) \[", view.dot, re.M))
    folded = set(render.folded_transposes(w.after))        # .T marks on edges, not boxes
    hidden = {*w.after.ops, *w.after.tensors} - drawn - folded
    n = int(re.search(r"(\d+) unchanged nodes? not drawn", view.dot).group(1))
    assert n == len(hidden) > 0 and "unchanged nodes, counted, not drawn" in view.dot     # counted, in the legend
    assert set(w.picture.ran) - folded <= drawn                                         # every node that ran is drawn
    assert w.picture.text.split("\npicture:")[0] in view.text                         # the text form keeps everything


def test_a_short_after_view_draws_every_box_and_leaves_out_the_settings():
    from backward_twice.graph import watch
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = (x * 3).pow(2).sum()
    with watch(y, names={"x": x, "y": y}) as w:
        y.backward()
    view = w.after_view()
    assert "unchanged node" not in view.dot and "(unchanged boxes faded)" in view.text.splitlines()[0]
    assert "exponent = 2" in draw(y).dot and "exponent = 2" not in view.dot     # backward never changes a setting
    assert "exponent = 2" in view.text                                          # the text form keeps it


def test_a_legend_takes_as_many_columns_as_fit_the_notebook_width():
    from backward_twice.picture import legend, palette
    many = palette.entries(["leaf", "op", "named", "held", "freed", "shared", "ran", "changed", "faded", "transpose"])
    n = legend.columns(many)
    assert n >= 3 and legend._legend_width(tuple(many), n) <= legend.LEGEND_BUDGET_PT
    assert n == 4 or legend._legend_width(tuple(many), n + 1) > legend.LEGEND_BUDGET_PT   # the most that fit
    assert legend.columns(many, budget_pt=100) == 2                                       # nothing fits: two
    assert legend.columns(palette.entries(["leaf", "op"])) == 2
    assert legend.columns(palette.entries(["leaf", "op", "held"])) == 3          # three that fit: one row


def test_a_transpose_of_a_transpose_is_drawn_as_boxes_not_dangling_edges():
    """Folding both TBackward0 of w.t().t() left each one's edge ending at the other's removed box
    (a tied-weights decoder, F.linear(z, enc.weight.t()), drew a bare ellipse)."""
    w = torch.ones(2, 3, requires_grad=True)
    x = torch.ones(4, 2)
    snap = snapshot((x @ w.t().t()).sum())
    assert render.folded_transposes(snap) == {}
    dot = draw((x @ w.t().t()).sum()).dot
    boxes = set(re.findall(r"^\t+(\w+) \[", dot, re.M))
    ends = {n for a, b in re.findall(r"^\t+(\w+) -> (\w+)", dot, re.M) for n in (a, b)}
    assert ends <= boxes and dot.count("TBackward0</B>") == 2


def test_the_changed_region_keeps_a_shared_weights_far_uses_far():
    """An RNN whose weight's .grad changed: its far uses are reference boxes of their own, not the
    weight again, so the region does not pull every step back in (it was 5,512 pt wide)."""
    from backward_twice.graph import watch
    from backward_twice.picture.layout import MIN_TEXT_PX, reads_at
    torch.manual_seed(0)
    w = torch.randn(4, 4, requires_grad=True)
    h, losses = torch.zeros(1, 4), []
    for _ in range(25):
        h = torch.tanh(h @ w + 1)
        losses.append(h.sum())
    with watch(losses[0], losses[-1], names={"w": w}) as pic:
        losses[0].backward()
    view = pic.after_view()
    assert reads_at(view.svg, MIN_TEXT_PX), view.text.splitlines()[0]


def test_an_after_view_with_nothing_to_fold_keeps_its_full_title():
    """Everything ran (one backward through a long chain): there is no region to draw, so the view
    is the full one, titled as such, never 'and its neighbours' over the whole graph."""
    from backward_twice.graph import watch
    x = torch.ones(3, requires_grad=True)
    h = x
    for _ in range(30):
        h = torch.tanh(h * 1.01)
    loss = h.sum()
    with watch(loss, names={"x": x, "loss": loss}) as w:
        loss.backward()
    view = w.after_view()
    # (60 nodes are too tall to fit 900 px: issue 28 folds the 28 identical blocks into one box)
    assert "unchanged" in view.text.splitlines()[0] and "unchanged node" not in view.dot
    assert "and its neighbours" not in view.text and "more of the block below" in view.dot and fits(view.svg)


def test_labels_with_markup_characters_show_literally_in_the_svg():
    """Text with <, >, \\, " and { in every kind of label the one writer makes (graphviz.Digraph
    reads '<...>' as HTML and passes backslashes on): an HTML table (a leaf's name), the framed
    title, the plain title (graphviz.nohtml, backslashes doubled) and an edge's mark; Graphviz's
    SVG shows each exactly as given."""
    import xml.etree.ElementTree as ET

    from backward_twice.picture import dot_writer
    from backward_twice.picture.build import scene_of

    weird = ['<lambda>', 'a\\nb "q" {x}', '<b>x</b> \\N']
    a = torch.tensor([1.0, 2.0], requires_grad=True)
    b = torch.tensor([3.0, 4.0], requires_grad=True)
    out = (a * b).sum()
    snap = snapshot(out, names={weird[0]: a, weird[1]: b, weird[2]: out})
    framed = render.to_dot(snap, title=weird[1])
    scene = scene_of(snap, legend=False)
    scene.title = weird[2] + " " + weird[0]           # a plain (quoted, not HTML) graph label
    plain = dot_writer.write(scene)
    assert 'label="&lt;b&gt;x&lt;/b&gt; \\\\N &lt;lambda&gt;"' in plain     # nohtml: quoted, escaped

    def texts(dot):
        root = ET.fromstring(render.svg_from_dot(dot))
        return [el.text or "" for el in root.iter("{http://www.w3.org/2000/svg}text")]

    shown = texts(framed)
    for w in weird:
        assert w in shown, (w, shown)
    assert weird[1] in shown                                     # the title, in its frame
    assert weird[2] + " " + weird[0] in texts(plain)
