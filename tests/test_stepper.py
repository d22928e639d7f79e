"""The backward stepper: engine order, release timing, gradients, static and widget views."""
import base64
import html
import re

import pytest
import torch

from backward_twice.graph import describe
from backward_twice.snapshot import GraphInputError, Role, fmt_values
from backward_twice.stepper import step_through
from backward_twice.trace import BackwardTrace, reachable_nodes
from backward_twice.walk import snapshot, snapshot_with_ids

SVG = re.compile(r'src="data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)"')


def small():
    """a is used twice (through mul and add); h retains its grad; exp saves its result."""
    a = torch.tensor([1.0, 2.0], requires_grad=True)
    w = torch.tensor([3.0, -1.0], requires_grad=True)
    h = a * w
    h.retain_grad()
    out = (h.exp() + a).sum()
    return dict(a=a, w=w, h=h, out=out)


def shared():
    """The graph of seeds 002/004: two roots on one trunk."""
    a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    c = (a ** 2) * 2
    return dict(a=a, c=c, d=c.mean(), e=c.sum())


def held(snap):
    return {(op.id, s.slot) for op in snap.ops.values() for s in op.saved if s.is_tensor and s.state == "held"}


def test_release_timing_in_this_torch():
    """What the stepper relies on: a node's saved tensors are still held in its own post-hook
    and freed before the next node's pre-hook (release_variables() follows the post-hooks)."""
    t = small()
    _, ids = snapshot_with_ids(t["out"])
    before = held(snapshot(t["out"]))
    seen = []
    with BackwardTrace(t["out"], on_start=lambda fn: seen.append(("start", ids[fn], held(snapshot(t["out"])))),
                       on_step=lambda s, fn: seen.append(("done", ids[fn], held(snapshot(t["out"]))))):
        t["out"].backward()
    assert [k for k, _, _ in seen] == ["start", "done"] * 6
    for (kind, nid, state), (_, _, state_next) in zip(seen, seen[1:]):
        own = {k for k in before if k[0] == nid}
        if kind == "done":
            assert own <= state, nid                       # still held inside its post-hook
            assert not (own & state_next), nid             # gone when the next node starts
    assert sum(bool({k for k in before if k[0] == nid}) for k, nid, _ in seen if k == "done") == 2
    assert held(snapshot(t["out"])) == set()


def test_order_is_the_engines():
    t = small()
    with BackwardTrace(t["out"]) as tr:
        t["out"].backward(retain_graph=True)
    st = step_through(lambda: t["out"].backward(retain_graph=True), t["out"], names=t)
    assert [label.split(" ", 1)[-1] if label.startswith("op") else "torch::autograd::AccumulateGrad"
            for label in st.order] == tr.order
    assert st.order == ["op1 SumBackward0", "op2 AddBackward0", "op3 ExpBackward0", "op4 MulBackward0",
                        "AccumulateGrad of a", "AccumulateGrad of w"]


def test_frames_say_what_was_released_and_what_accumulated():
    t = small()
    st = step_through(lambda: t["out"].backward(), t["out"], names=t)
    by_label = {f.node_label: f for f in st.steps}
    exp, mul = by_label["op3 ExpBackward0"], by_label["op4 MulBackward0"]
    assert exp.released == ["its saved result: (2,) float32 8 B"]
    assert sorted(mul.released) == ["its saved other (= w): (2,) float32 8 B",
                                    "its saved self (= a): (2,) float32 8 B"]
    assert by_label["op1 SumBackward0"].released == []
    # h.grad is filled in the step of the node that made h; a.grad once, with both paths summed
    assert mul.grad_changes == [f"h.grad: None -> {fmt_values(t['h'].grad)}"]
    acc_a = by_label["AccumulateGrad of a"]
    assert acc_a.grad_changes == [f"a.grad: None -> {fmt_values(t['a'].grad)}"]
    assert "sum of the 2 gradients" in acc_a.grads_in[0]
    assert [d for d, _ in by_label["op2 AddBackward0"].grads_out] == ["op3 ExpBackward0", "a (its AccumulateGrad)"]
    # each frame's picture: the node that ran is highlighted, and its own release is drawn
    assert mul.node_id == "op4" and {s.state for s in mul.snapshot.ops["op4"].saved if s.is_tensor} == {"freed"}
    assert st.frames[-1].snapshot.count_by_state()["held"] == 0
    assert st.frames[0].snapshot.count_by_state()["held"] == 3


def test_retain_graph_releases_nothing():
    t = small()
    st = step_through(lambda: t["out"].backward(retain_graph=True), t["out"], names=t)
    assert all(f.released == [] for f in st.steps)
    assert st.frames[-1].snapshot.count_by_state() == {"held": 3, "freed": 0}
    assert "released after it ran: nothing" in st.text


def test_second_backward_on_a_shared_graph_stops_at_the_node_that_needs_a_freed_tensor():
    t = shared()
    first = step_through(lambda: t["d"].backward(), t["d"], t["e"], names=t)
    assert [f.node_label for f in first.steps] == ["op1 MeanBackward0", "op3 MulBackward0",
                                                   "op4 PowBackward0", "AccumulateGrad of a"]
    st = step_through(lambda: t["e"].backward(), t["d"], t["e"], names=t, expect_error=RuntimeError)
    assert isinstance(st.raised, RuntimeError)
    last = st.frames[-1]
    assert last.error.startswith("RuntimeError: Trying to backward through the graph a second time")
    assert last.node_label == "op3 MulBackward0" and last.node_id == "op3"
    assert st.caption(len(st.frames) - 1).splitlines()[1] == "  it needs its saved other: () int64 8 B, already FREED"
    assert [f.node_label for f in st.steps] == ["op2 SumBackward0"]   # sum saves nothing: it ran
    with pytest.raises(RuntimeError, match="second time"):          # unexpected errors propagate
        step_through(lambda: t["e"].backward(), t["e"], names=t)
    fresh = shared()
    with pytest.raises(AssertionError, match="expected the call to raise RuntimeError"):
        step_through(lambda: fresh["e"].backward(), fresh["e"], names=fresh, expect_error=RuntimeError)


def test_node_ids_match_the_snapshot():
    for t, roots in ((small(), ("out",)), (shared(), ("d", "e")), (shared(), ("e", "d", "c")),
                     (shared(), ("a", "e"))):          # a leaf as a root, and reached through e
        tensors = [t[r] for r in roots]
        snap, ids = snapshot_with_ids(*tensors, names=t)
        assert describe(snap) == describe(snapshot(*tensors, names=t))      # the same picture
        for fn in reachable_nodes(*tensors):
            nid = ids[fn]
            if snap.role(nid) is Role.OP:
                assert snap.ops[nid].name == fn.name()
            else:
                assert snap.tensors[nid].name in t and t[snap.tensors[nid].name] is fn.variable


def test_static_views_are_deterministic_and_complete():
    def make():
        t = small()
        return step_through(lambda: t["out"].backward(), t["out"], names=t)

    one, two = make(), make()
    bundle = one._repr_mimebundle_()
    assert bundle["text/plain"] == one.text == two.text
    assert one.html == two.html                                # same engine: byte for byte
    images = SVG.findall(bundle["text/html"])
    assert len(images) == len(one.frames) == 7
    assert bundle["text/html"].count("<figcaption>") == 7 and "<svg" not in one.html
    assert base64.b64decode(images[4]).decode().startswith("<svg")     # the frame of step 4
    assert one.svg(4).startswith("<svg") and "<!--" not in one.svg(4)  # for the widget: inline, no prolog
    assert "step 4 of 6 · op4 MulBackward0 ran" in one.html
    assert one.text.splitlines()[0].startswith("backward, step by step: 6 node(s) ran, in this order: op1 SumBackward0")


def test_widget_buttons_and_slider():
    t = small()
    st = step_through(lambda: t["out"].backward(), t["out"], names=t)
    box = st.widget()
    reset, prev, slider, nxt = box.children[0].children
    caption, picture, style = box.children[1:]
    assert "before the call" in caption.value and prev.disabled and not nxt.disabled
    # the caption is a live region, the picture has a text alternative, focus shows (issue 30 §3)
    assert caption.value.startswith('<div role="status" aria-live="polite" aria-atomic="true"><pre>')
    assert picture.value.startswith(f'<div role="img" aria-label="{html.escape(st.alt(0), quote=True)}"><svg')
    assert ".bt-stepper .jupyter-button:focus-visible" in style.value and ".noUi-handle:focus" in style.value
    assert "outline: 3px solid" in style.value and "bt-stepper" in box._dom_classes
    nxt.click()
    assert slider.value == 1 and "step 1 of 6" in caption.value and "op1" in picture.value
    slider.value = 6
    assert nxt.disabled and "after the call" in caption.value
    prev.click()
    assert slider.value == 5
    reset.click()
    assert slider.value == 0 and "before the call" in caption.value
    assert st.widget() is box


def test_bad_input_gets_a_sentence():
    t = small()
    with pytest.raises(GraphInputError, match="as a function"):
        step_through(t["out"], t["out"])
    with pytest.raises(GraphInputError, match="needs the tensors"):
        step_through(lambda: None)
    x = torch.ones(2, requires_grad=True)
    y = x
    for _ in range(80):
        y = y * 1.0
    with pytest.raises(GraphInputError, match="max_nodes"):
        step_through(lambda: y.sum().backward(), y)
    z = x
    for _ in range(10):
        z = z + 1.0
    with pytest.raises(GraphInputError, match="max_steps"):
        step_through(lambda: z.sum().backward(), z, max_steps=5)


def test_nbval_compares_the_captions_but_not_the_svg_inside_the_html():
    """tests/nbval_sanitize.cfg blanks inline SVG (Graphviz builds differ), nothing else."""
    import pathlib

    from nbval.plugin import get_sanitize_patterns

    cfg = pathlib.Path(__file__).with_name("nbval_sanitize.cfg").read_text()

    def sanitize(s):
        for regex, replace in get_sanitize_patterns(cfg):
            s = re.sub(regex, replace, s)
        return s

    t = small()
    html = step_through(lambda: t["out"].backward(), t["out"], names=t).html
    other_engine = SVG.sub(lambda m: 'src="data:image/svg+xml;base64,'
                           + base64.b64encode(re.sub(r'(points|d|x|y)="[^"]*"', r'\1="1 2"',
                                                     base64.b64decode(m.group(1)).decode()).encode()).decode()
                           + '"', html)
    assert other_engine != html and sanitize(other_engine) == sanitize(html)
    assert sanitize(html.replace("step 4 of 6", "step 5 of 6")) != sanitize(html)
    assert sanitize(html).count("base64,SVG") == 7


def test_a_leaf_passed_as_a_root_is_named_in_the_steps():
    t = shared()
    st = step_through(lambda: t["e"].backward(), t["a"], t["e"], names={"a": t["a"], "e": t["e"]})
    assert st.order[-1] == "AccumulateGrad of a"


def test_every_frame_draws_each_node_in_the_same_place():
    """Notebook 02's stepper over loss_car.backward(): boxes gain FREED marks and grads from
    frame to frame; each is drawn at its largest size in every frame, with one legend for all,
    so only what a step changed changes (the title node too keeps its size)."""
    from autograd_programs import cat_car, node_places

    from backward_twice import render

    loss_cat, loss_car, names = cat_car()
    s = step_through(lambda: loss_car.backward(), loss_cat, loss_car, names=names)
    dots = [s.dot(i) for i in range(len(s.frames))]
    places = [node_places(d) for d in dots]
    assert len(places) == 12 and len(places[0]) == 18          # 18 boxes (the title: a cluster label)
    assert all(p == places[0] for p in places)
    legends = {re.search(r"label=<<TABLE BORDER=\"0\" CELLBORDER=\"0\" CELLSPACING=\"2\".*?</TABLE>>", d).group(0) for d in dots}
    assert len(legends) == 1 and "saved tensor FREED by backward" in legends.pop()
    # the same frames, each laid out from its own sizes, move: the test above can fail
    own = [node_places(render.to_dot(f.snapshot, title=s._title(i), marks=s._marks(i)))
           for i, f in enumerate(s.frames)]
    assert any(p != own[0] for p in own)


def test_a_refused_graph_too_big_to_count_says_more_than():
    # issue 28 §2: a 20,849-node graph was refused as "this graph has 20000 nodes"
    from backward_twice.walk import COUNT_LIMIT

    x = torch.ones(1, requires_grad=True)
    y = x
    for _ in range(COUNT_LIMIT + 10):
        y = y * 1.0
    with pytest.raises(GraphInputError, match=f"this graph has more than {COUNT_LIMIT:,} nodes, more than max_nodes=60"):
        step_through(lambda: y.backward(), y)


def test_jupyterlab_keeps_what_the_stepper_relies_on():
    """ipywidgets' HTML widget sets its value as innerHTML, never through JupyterLab's sanitizer
    (which drops role and aria-* from outputs): so the caption's live region and the focus style
    reach the page. Read from the installed widget manager; an upgrade that sanitises fails here."""
    import pathlib
    import sys
    root = pathlib.Path(sys.prefix) / "share" / "jupyter" / "labextensions" / "@jupyter-widgets" / "jupyterlab-manager"
    bundles = list(root.glob("static/*.js"))
    if not bundles:
        pytest.skip("jupyterlab_widgets is not installed")
    assert any('this.content.innerHTML=this.model.get("value")' in p.read_text(errors="ignore") for p in bundles)
