"""Regression tests for renderer bugs found by fuzzing (tests/test_fuzz_renderer.py) and for
the speed-ups of issue 6, which must not change a single byte of output."""
import html

import graphviz
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import render
from helpers.graph import draw
from helpers.snapshot import NAMED_TENSOR_ROLES
from helpers.walk import snapshot


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


def _reference_add_snapshot(g, snap, prefix="", highlight=()):
    """The original implementation: one graphviz call per node and edge."""
    for op in snap.ops.values():
        g.node(prefix + op.id, render._op_label(op, op.id in highlight), shape="plaintext", margin="0")
    for t in snap.tensors.values():
        g.node(prefix + t.id, render._tensor_label(t, t.id in highlight), shape="plaintext", margin="0")
    for a, b in snap.edges:
        style = {"style": "dashed"} if snap.role(b) in NAMED_TENSOR_ROLES else {}
        g.edge(prefix + a, prefix + b, **style)
    if snap.truncated:
        g.node(prefix + "more", render._summary_label(snap), shape="plaintext")
        for op_id in snap.cut_at:
            g.edge(prefix + "more", prefix + op_id, style="dotted")


def test_fast_dot_is_byte_identical_to_graphviz_calls():
    for snap in _graphs():
        for prefix in ("", "L_"):
            fast, ref = render.new_digraph("t"), render.new_digraph("t")
            render.add_snapshot(fast, snap, prefix=prefix, highlight=("op1",))
            _reference_add_snapshot(ref, snap, prefix=prefix, highlight=("op1",))
            assert fast.source == ref.source


@settings(max_examples=200, derandomize=True, database=None)
@given(st.text())
def test_escape_matches_html_escape_plus_braces(text):
    assert render.esc(text) == html.escape(text, quote=True).replace("{", "&#123;").replace("}", "&#125;")


def test_saved_tensor_changed_in_place_is_drawn_not_a_crash():
    # found by fuzzing: reading the saved tensor raises "modified by an inplace operation",
    # which the walker re-raised, so draw() crashed
    x = torch.ones(3, requires_grad=True)
    y = x.exp()
    y.mul_(2)
    snap = snapshot(y, names={"x": x})
    exp = next(op for op in snap.ops.values() if op.name == "ExpBackward0")
    # still held (in memory), flagged; its size is known only from an earlier walk
    assert [(s.slot, s.state, s.modified) for s in exp.saved] == [("result", "held", "version 0 -> 1")]
    assert snap.count_by_state() == {"held": 2, "freed": 0}
    assert "MODIFIED IN PLACE since saved (version 0 -&gt; 1)" in render.to_dot(snap)


def test_custom_function_first_drawn_after_backward():
    # found by fuzzing: hasattr(fn, "saved_tensors") raises RuntimeError after backward
    class Cube(torch.autograd.Function):     # a class never drawn before
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 3 * x ** 2 * g

    y = Cube.apply(torch.ones(2, requires_grad=True)).sum()
    y.backward()
    assert "FREED saved_tensors" in draw(y).text


def test_root_beyond_the_cap_is_counted_not_dropped():
    # found by fuzzing: a root whose node did not fit under max_nodes vanished silently
    x = torch.ones(1, requires_grad=True)
    roots = [x * i for i in range(5)]
    snap = snapshot(*roots, max_nodes=3)
    assert snap.truncated and snap.total_nodes == 6        # 5 MulBackward0 + x
    assert len(snap.ops) + sum(t.role == "leaf" for t in snap.tensors.values()) == 3


def test_leaf_root_is_one_box_and_counts():
    # found by fuzzing: a leaf passed as a root counted 0 nodes, and was drawn twice
    # when it was also reached from another root
    x = torch.ones(2, requires_grad=True)
    assert snapshot(x).total_nodes == 1
    snap = snapshot(x, x * 2, names={"x": x})
    assert [t.name for t in snap.tensors.values() if t.role == "leaf"] == ["x"]
    assert snap.total_nodes == 2
    snap = snapshot(x * 2, x, max_nodes=1)                 # the leaf root beyond the cap
    assert snap.truncated and snap.total_nodes == 2 and snap.hidden_by_type["leaf"] == 1


def test_unnamed_root_does_not_take_a_given_name():
    x = torch.ones(1, requires_grad=True)
    text = draw(x * 2, names={"out": x}).text
    assert "leaf out (1,)" in text and "output out' (1,)" in text


def test_function_saving_nothing_shows_nothing_saved():
    class Twice(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    snap = snapshot(Twice.apply(torch.ones(2, requires_grad=True)))
    assert [op.saved for op in snap.ops.values()] == [[]]   # was: "value saved_tensors = ()"


def test_layout_iterations_are_bounded():
    # Graphviz's network simplex ran unbounded: a weight shared by 100 layers (tanh(y @ w))
    # took 145 s to lay out at 300 nodes, a kernel frozen for minutes. nslimit/nslimit1
    # bound it (0.8 s); small pictures lay out identically.
    x, w = torch.ones(1, 4, requires_grad=True), torch.ones(4, 4, requires_grad=True)
    y = torch.tanh(x @ w)
    dot = draw(y).dot
    assert "nslimit=2" in dot and "nslimit1=2" in dot
