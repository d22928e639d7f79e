"""backward_twice.graph: draw, compare and watch, and their text form (freed vs held around backward, the cap)."""
import base64
import re

import pytest
import torch
from autograd_programs import Square, chain, seed_graph

from backward_twice.graph import compare, draw, watch
from backward_twice.walk import snapshot


def op_names(snap):
    return [op.name for op in snap.ops.values()]


def saved_states(snap):
    return {(op.name, s.slot): s.state for op in snap.ops.values() for s in op.saved if s.is_tensor}


# ---------------------------------------------------------------- structure
def test_a_picture_stores_its_svg_once_as_an_image_every_front_end_shows():
    t = seed_graph()
    bundle = draw(t["d"], t["e"], names=t)._repr_mimebundle_()
    # no second copy as image/svg+xml; the DOT it was drawn from, for the golden pictures
    assert set(bundle) == {"text/plain", "text/html", "text/vnd.graphviz"}
    assert bundle["text/html"].startswith('<figure class="bt-figure" style="margin:0"><img alt="Autograd graph of 4 ops '
                                          'and 1 leaf (a). HELD, each by the node that saved it: ')
    assert '" src="data:image/svg+xml;base64,' in bundle["text/html"]
    svg = base64.b64decode(re.search(r"base64,([^\"]+)", bundle["text/html"]).group(1)).decode()
    assert "<svg" in svg and "PowBackward0" in svg


def test_text_is_deterministic_and_has_no_addresses():
    texts = []
    for _ in range(2):
        t = seed_graph()
        texts.append(draw(t["d"], t["e"], names=t).text)
    assert texts[0] == texts[1]
    assert "0x" not in texts[0] and "object at" not in texts[0]


# ---------------------------------------------------------------- freed vs held
def test_backward_frees_every_saved_tensor_and_keeps_structure():
    t = seed_graph()
    before = snapshot(t["d"], t["e"], names=t)
    t["d"].backward()
    after = snapshot(t["d"], t["e"], names=t)
    assert op_names(after) == op_names(before)            # structure still walkable
    assert set(saved_states(after).values()) == {"freed"}
    # sizes of freed buffers are remembered from the earlier walk
    assert after.bytes_by_state() == {"held": 0, "freed": before.bytes_by_state()["held"]}
    # and "freed" is true: reading the saved tensor raises, and so does e.backward()
    with pytest.raises(RuntimeError, match="freed"):
        _ = t["b"].grad_fn._saved_self
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        t["e"].backward()


def test_retain_graph_keeps_saved_tensors():
    t = seed_graph()
    t["d"].backward(retain_graph=True)
    snap = snapshot(t["d"], t["e"], names=t)
    assert set(saved_states(snap).values()) == {"held"}
    t["e"].backward()  # works, and now everything is freed
    assert set(saved_states(snapshot(t["e"], names=t)).values()) == {"freed"}
    # d/da of mean(2a^2) + sum(2a^2) = a + 4a
    assert torch.allclose(t["a"].grad, 5 * t["a"].detach())


def test_freed_size_unknown_without_earlier_walk():
    t = seed_graph()
    t["d"].backward()
    snap = snapshot(t["d"], names=t)
    freed = [s for _, s in snap.saved_tensors()]
    assert freed and all(s.state == "freed" and s.nbytes is None for s in freed)
    assert "size unknown" in draw(t["d"], names=t).text


def test_compare_reports_what_was_freed_and_grads():
    t = seed_graph()
    before = draw(t["d"], t["e"], names=t)
    t["d"].backward()
    pair = compare(before, draw(t["d"], t["e"], names=t))
    assert "freed 2 saved tensor(s), 24 B: MulBackward0.other, PowBackward0.self" in pair.text
    assert "a.grad: None -> [1, 2, 3, 4] (1, 4)" in pair.text  # d = mean(2a^2): dd/da = a


def test_watch_takes_after_picture_even_when_block_raises():
    t = seed_graph()
    t["d"].backward()
    with pytest.raises(RuntimeError):
        with watch(t["e"], names=t, label="e.backward()") as w:
            t["e"].backward()
    assert isinstance(w.raised, RuntimeError)
    assert "after e.backward() (raised RuntimeError)" in w.picture.text


def test_retained_intermediate_shows_grad():
    a = torch.tensor([1.0, 2.0], requires_grad=True)
    b = a * 3
    b.retain_grad()
    loss = b.sum()
    loss.backward()
    snap = snapshot(loss, names={"a": a, "b": b, "loss": loss})
    box = next(t for t in snap.tensors.values() if t.name == "b")
    assert box.retains_grad and box.grad == "[1, 1]"
    leaf = next(t for t in snap.tensors.values() if t.name == "a")
    assert leaf.grad == "[3, 3]"


def test_custom_function_saved_tensors_tracked():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = Square.apply(x).sum()
    assert ("SquareBackward", "saved_tensors[0]") in saved_states(snapshot(y))
    y.backward()
    assert saved_states(snapshot(y))[("SquareBackward", "saved_tensors[0]")] == "freed"


def test_graph_without_saved_tensors_is_not_freed():
    # nothing saved -> nothing to free -> backward twice works without retain_graph
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = (x + 1).sum()
    y.backward()
    y.backward()
    assert saved_states(snapshot(y)) == {}
    assert torch.equal(x.grad, torch.tensor([2.0, 2.0]))


# ---------------------------------------------------------------- depth and cap
def test_deep_chain_renders_with_default_cap():
    x, y = chain(5000)
    pic = draw(y, names={"x": x, "y": y})
    snap = pic.snapshot
    assert snap.truncated and len(snap.ops) + 1 <= 300 + 1
    assert snap.hidden_by_type["MulBackward0"] == 5000 - len(snap.ops)
    assert snap.hidden_by_type["leaf"] == 1
    assert "NOT DRAWN: 4701 more nodes" in pic.text
    assert "<svg" in pic.svg and "more nodes not drawn" in pic.svg


# bad input: tests/test_bad_inputs.py (one table of everything a learner might pass)


# ---------------------------------------------------------------- engines


# ---------------------------------------------------------------- compare(trace=)
def _two_muls():
    """d = a * 2 and e = a * 3: two ops of the same name, told apart only by which one ran."""
    a = torch.tensor([1.0, 2.0], requires_grad=True)
    return {"a": a, "d": (a * 2).sum(), "e": (a * 3).sum()}


def test_compare_with_a_trace_marks_what_ran_as_watch_does():
    from backward_twice.trace import BackwardTrace

    t = seed_graph()
    with watch(t["d"], t["e"], names=t) as w:
        t["d"].backward(retain_graph=True)
    u = seed_graph()
    before = draw(u["d"], u["e"], names=u)
    with BackwardTrace(u["d"], u["e"]) as tr:
        u["d"].backward(retain_graph=True)
    pic = compare(before, draw(u["d"], u["e"], names=u), trace=tr)
    assert pic.ran == w.picture.ran == {"op1": (1,), "op3": (2,), "op4": (3,), "leaf1": (4,)}  # Mean, Mul, Pow, a
    assert pic.text == w.picture.text
    assert "backward ran 4 node(s), in this order: op1 MeanBackward0" in pic.text
    assert "ran #1" in pic.dot and "ran #1" not in compare(before, draw(u["d"], u["e"], names=u)).dot


def test_compare_trace_ids_follow_the_nodes_not_the_order_of_the_roots():
    from backward_twice.trace import BackwardTrace

    t = _two_muls()
    before = draw(t["d"], t["e"], names=t)
    with BackwardTrace(t["e"], t["d"]) as tr:          # the roots in the other order
        t["e"].backward()
    after = draw(t["d"], t["e"], names=t)
    pic = compare(before, after, trace=tr)
    e_sum = next(op.id for op in after.snapshot.ops.values() if op.produces == ["e"])
    e_mul = after.snapshot.ops[e_sum].inputs[0]
    d_sum = next(op.id for op in after.snapshot.ops.values() if op.produces == ["d"])
    assert e_sum in pic.ran and e_mul in pic.ran and d_sum not in pic.ran
    assert pic.ran[e_sum] == (1,) and pic.ran[e_mul] == (2,)


def test_compare_trace_of_another_graph_is_a_clear_error():
    from backward_twice.snapshot import GraphInputError
    from backward_twice.trace import BackwardTrace

    t, u = seed_graph(), seed_graph()                   # two graphs of the same shape
    before = draw(t["d"], names=t)
    with BackwardTrace(u["d"]) as tr:
        u["d"].backward()
    with pytest.raises(GraphInputError, match=r"another graph than `after`: 4 of the 4 nodes drawn"):
        compare(before, draw(t["d"], names=t), trace=tr)
    with pytest.raises(GraphInputError, match="BackwardTrace used around the backward call"):
        compare(before, before, trace=[tr])
    v = seed_graph()
    with BackwardTrace(v["d"]) as live:
        with pytest.raises(GraphInputError, match="still recording"):
            compare(before, draw(v["d"]), trace=live)


def test_compare_trace_over_more_than_is_drawn_names_the_rest():
    from backward_twice.trace import BackwardTrace

    x, y = chain(20)
    before = draw(y, max_nodes=5)
    with BackwardTrace(y) as tr:
        y.backward(torch.ones(2))
    pic = compare(before, draw(y, max_nodes=5), trace=tr)
    assert sorted(k for ks in pic.ran.values() for k in ks) == [1, 2, 3, 4, 5]
    assert "backward ran 21 node(s)" in pic.text and "(not drawn)" in pic.text


def test_watch_hooks_the_drawn_nodes_and_counts_the_rest_from_the_engines_plan():
    """watch() on a graph larger than its picture: the drawn nodes are numbered among themselves,
    the others counted from the engine's plan (hooking 20k nodes cost more than the backward);
    on a call that raised, what ran among the nodes not drawn is said to be unknown."""
    from backward_twice.trace import BackwardTrace

    x, y = chain(20)
    with BackwardTrace(y) as full:
        y.backward(torch.ones(2))
    x, y = chain(20)
    with watch(y, max_nodes=5) as w:
        y.backward(torch.ones(2), retain_graph=True)
    assert sorted(k for ks in w.picture.ran.values() for k in ks) == [1, 2, 3, 4, 5]
    drawn = len(w.picture.ran)
    assert f"backward ran {len(full.steps)} node(s): {drawn} drawn node(s), in this order: op1" in w.picture.text
    assert f"and {len(full.steps) - drawn} not drawn" in w.picture.text
    y.backward(torch.ones(2))          # frees the graph
    with pytest.raises(RuntimeError, match="second time"), watch(y, max_nodes=5) as w2:
        y.backward(torch.ones(2))     # the first node raises: no drawn node finished
    assert not w2.picture.ran and "whether it ran some of them is not recorded" in w2.picture.text
    x = torch.ones(2, requires_grad=True)
    a = x.exp()
    h = a + 0
    for _ in range(20):
        h = h * 2
    a.add_(1)                          # ExpBackward0, at the bottom, not drawn, will raise
    with pytest.raises(RuntimeError, match="modified by an inplace operation"), watch(h, max_nodes=5) as w3:
        h.sum().backward()
    assert sorted(k for ks in w3.picture.ran.values() for k in ks) == [1, 2, 3, 4, 5]
    assert "node(s) not drawn to run, and raised: which of those ran before it stopped was not recorded" \
        in w3.picture.text
