"""Everything a learner might pass to draw(), in one table: a clear error or a safe picture.

Each row: what is passed, then either ("error", words the message must contain) or
("draws", a check on the picture). Errors are GraphInputError (a ValueError) whose message
says what to do; nothing else may escape (no AttributeError, no torch internals).
Pictures must render to SVG with the name text escaped.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch
from autograd_programs import Square

from backward_twice.graph import draw, watch
from backward_twice.snapshot import GraphInputError


def leaf(*shape, **kw):
    return torch.ones(*shape, requires_grad=True, **kw)


def _no_grad_result():
    x = leaf(3)
    with torch.no_grad():
        return x * 2


def _modified_saved_tensor():
    x = leaf(3)
    y = x.exp()                     # ExpBackward0 saves its result, y
    y.mul_(2)                       # ... which is then changed in place
    return y




def _custom_fn_after_backward():
    y = Square.apply(leaf(2)).sum()
    y.backward()                    # drawn for the first time only now
    return y


def _sparse_grad():
    emb = torch.nn.Embedding(5, 2, sparse=True)
    out = emb(torch.tensor([1, 3])).sum()
    out.backward()
    return emb.weight


def _chain(n):
    y = leaf(2)
    for _ in range(n):
        y = y * 1.5
    return y


def _wide(n):
    return sum(leaf(1) * i for i in range(n))


ERRORS = [
    # (id, call, words in the message)
    ("nothing", lambda: draw(), "at least one tensor"),
    ("None", lambda: draw(None), "missing `return`"),
    ("float", lambda: draw(3.0), ".item()"),
    ("int", lambda: draw(3), ".item()"),
    ("loss.item()", lambda: draw((leaf(2) * 2).sum().item()), ".item()"),
    ("numpy array", lambda: draw(np.ones(3)), "torch.tensor(x, requires_grad=True)"),
    ("nn.Module", lambda: draw(torch.nn.Linear(2, 2)), "not the model"),
    ("string", lambda: draw("loss"), "not a torch.Tensor"),
    ("list of tensors", lambda: draw([leaf(1) * 2, leaf(1) * 3]), "draw(*outputs)"),
    ("tuple from unbind", lambda: draw((leaf(2, 2) * 1).unbind(0)), "draw(*outputs)"),
    ("names as 2nd positional", lambda: draw(leaf(1) * 2, {"x": leaf(1)}), "names={"),
    ("names is a list", lambda: draw(leaf(1) * 2, names=[leaf(1)]), "names must be a dict"),
    ("names value None", lambda: draw(leaf(1) * 2, names={"y": None}), "names['y'] is None"),
    ("names value int", lambda: draw(leaf(1) * 2, names={"y": 3}), "names['y'] is a int"),
    ("names key not str", lambda: draw(leaf(1) * 2, names={1: leaf(1)}), "got key 1"),
    ("tensor without grad", lambda: draw(torch.ones(3)), "requires_grad=True"),
    ("leaf without grad (int)", lambda: draw(torch.arange(3)), "requires_grad=False"),
    ("comparison result", lambda: draw(leaf(3) > 0), "no autograd graph"),
    ("result of torch.no_grad()", lambda: draw(_no_grad_result()), "no_grad"),
    ("detached result", lambda: draw((leaf(3) * 2).detach()), "detach"),
    ("max_nodes=0", lambda: draw(leaf(1) * 2, max_nodes=0), "max_nodes must be"),
    ("max_nodes='10'", lambda: draw(leaf(1) * 2, max_nodes="10"), "max_nodes must be"),
    ("max_nodes=True", lambda: draw(leaf(1) * 2, max_nodes=True), "max_nodes must be"),
    ("max_nodes=10**6", lambda: draw(leaf(1) * 2, max_nodes=10**6), "from 1 to 20,000"),
    ("focus not in the graph (computed again)", lambda: _focus_recomputed(), "(h) is not in the graph behind loss"),
    ("focus from another graph", lambda: draw(leaf(2).exp(), focus=leaf(2) * 3), "focus is not in the graph behind out"),
    ("focus leaf not used", lambda: draw(leaf(2).exp(), focus=leaf(2)), "is not in the graph behind out"),
    ("focus a string", lambda: draw(leaf(1) * 2, focus="h"), "focus='h' names a module path: draw it with modules=model"),
    ("focus a float", lambda: draw(leaf(1) * 2, focus=1.5), ".item()"),
    ("focus a module", lambda: draw(leaf(1) * 2, focus=torch.nn.Linear(1, 1)), "not the layer"),
    ("focus list item None", lambda: draw(leaf(1) * 2, focus=[leaf(1), None]), "focus[1] is None"),
    ("focus empty list", lambda: draw(leaf(1) * 2, focus=[]), "at least one tensor"),
    ("focus without a graph", lambda: draw(leaf(1) * 2, focus=torch.ones(1)), "focus has no autograd graph"),
    ("focus detached", lambda: _focus_detached(), ".detach()ed copy"),
    # focus= with modules= composes now (tests/test_fuzz_renderer.py); module paths without modules= are
    # nonsense (expand=True alone draws every op, nothing folded)
    ("expand without modules=", lambda: draw(leaf(1) * 2, expand=["cat"]), "it needs modules=model too"),
]


def _focus_recomputed():
    x = leaf(2)
    h = x.tanh()
    loss = h.sum()
    h = x.tanh()                    # a new h after the loss: not what the loss was computed from
    return draw(loss, names={"h": h, "loss": loss}, focus=h)


def _focus_detached():
    h = leaf(2).tanh()
    return draw(h.sum(), focus=h.detach())


@pytest.mark.parametrize("call, words", [c[1:] for c in ERRORS], ids=[c[0] for c in ERRORS])
def test_clear_error(call, words):
    with pytest.raises(GraphInputError) as info:
        call()
    assert words in str(info.value)
    assert "Traceback" not in str(info.value) and " at 0x" not in str(info.value)


def test_unreadable_grad_fn_is_a_clear_error():
    """A view from unbind/split whose base changed in place: torch raises on .grad_fn."""
    base = leaf(2, 3) * 1
    a, b = base.unbind(0)
    base.mul_(2)                         # torch allows this on the base ...
    with pytest.raises(RuntimeError, match="is a view and its base"):
        _ = a.grad_fn                    # ... but then refuses to give the view's grad_fn
    with pytest.raises(GraphInputError, match="torch refuses to read its grad_fn"):
        draw(a)
    with pytest.raises(GraphInputError, match=r"names\['a'\]"):
        draw(base, names={"a": a})


DRAWS = [
    # (id, make the picture, what it must show)
    ("leaf that requires grad, no grad yet", lambda: draw(leaf(2)),
     lambda p: p.text.startswith("leaf out (2,) float32 grad=None")),
    ("leaf with a grad", lambda: _leaf_with_grad(), lambda p: "grad=[2, 2]" in p.text),
    ("the same leaf twice, as root and inside",
     lambda: _same_leaf_twice(), lambda p: p.text.count("leaf x ") == 1),
    ("0-dim", lambda: draw(leaf(()) * 2), lambda p: "() float32" in p.text),
    ("float16", lambda: draw(leaf(2, dtype=torch.float16) * 2), lambda p: "float16" in p.text),
    ("bfloat16", lambda: draw(leaf(2, dtype=torch.bfloat16).exp()), lambda p: "bfloat16 4 B" in p.text),
    ("complex", lambda: draw((leaf(2, dtype=torch.complex64) * 2).abs()), lambda p: "complex64" in p.text),
    ("float64", lambda: draw(leaf(2, dtype=torch.float64).sin()), lambda p: "float64 16 B" in p.text),
    ("sparse grad", lambda: draw(_sparse_grad()), lambda p: "grad=(5, 2) sparse_coo, 4 stored values, norm 2" in p.text),
    ("saved tensor changed in place", lambda: draw(_modified_saved_tensor()),
     lambda p: "held  result: size unknown MODIFIED IN PLACE since saved (version 0 -> 1)" in p.text),
    ("custom Function drawn first after backward", lambda: draw(_custom_fn_after_backward()),
     lambda p: "FREED saved_tensors" in p.text),
    ("huge chain (50,000 ops)", lambda: draw(_chain(50_000)),
     lambda p: "NOT DRAWN: 19700+ more nodes" in p.text),
    ("huge wide graph (3,000 leaves)", lambda: draw(_wide(3000)), lambda p: "NOT DRAWN" in p.text),
    ("many roots, small cap", lambda: draw(*[leaf(1) * i for i in range(5)], max_nodes=3),
     lambda p: "NOT DRAWN" in p.text),
    ("caller's name 'out' kept", lambda: _name_out_kept(), lambda p: "leaf out (1,)" in p.text),
]

NAMES = ['say "hi"', "it's", "{braces}", "<script>alert(1)</script>", "a&b", "back\\slash",
         "new\nline", "", " ", "ünï©ødé ∂", "x" * 2000, "</B></TD>", "]; node [shape=box", "&#123;"]


def _leaf_with_grad():
    x = leaf(2)
    (x * 2).sum().backward()
    return draw(x, names={"x": x})


def _same_leaf_twice():
    x = leaf(2)
    return draw(x, x * 2, names={"x": x})


def _name_out_kept():
    x = leaf(1)
    return draw(x * 2, names={"out": x})


@pytest.mark.parametrize("make, check", [d[1:] for d in DRAWS], ids=[d[0] for d in DRAWS])
def test_safe_picture(make, check):
    pic = make()
    assert check(pic), pic.text
    svg = pic.svg
    assert svg.lstrip().startswith("<?xml") or "<svg" in svg


@pytest.mark.parametrize("name", NAMES, ids=[repr(n)[:20] for n in NAMES])
def test_any_name_is_escaped(name):
    x = leaf(1)
    y = x * 2
    pic = draw(y, names={name: x, "y": y})
    assert "<script" not in pic.dot and "<script" not in pic.svg
    assert name in pic.text                     # the text form keeps the name as written
    # the label markup survives: one node per op/tensor, whatever the name (drawn as drawn: a name
    # of hundreds of characters cannot fit the notebook width, and the fit rule would draw a card)
    pic = draw(y, names={name: x, "y": y})
    pic.held_to_rule = False
    assert pic.svg.count('class="node"') == len(pic.snapshot.ops) + len(pic.snapshot.tensors)


@pytest.mark.parametrize("bad", [None, "focus"])
def test_watch_with_bad_input_fails_before_the_block_runs(bad):
    ran = []
    with pytest.raises(GraphInputError):
        with watch(None) if bad is None else watch(leaf(1) * 2, focus=leaf(1)):
            ran.append(1)
    assert ran == []


def test_drawing_a_huge_chain_does_not_crash_when_it_is_freed():
    """Regression: the hidden-node count used to walk up to 200,000 nodes. In torch 2.13,
    once Python has touched the nodes of a chain deeper than ~45,000, freeing the graph
    overflows the C stack (segfault, the kernel dies). The walk now stops at 20,000."""
    y = _chain(60_000)
    pic = draw(y)
    assert pic.snapshot.count_capped and pic.snapshot.total_nodes == 20_000
    del y                       # frees the 60,000-node graph: must not kill the process
    assert "NOT DRAWN: 19700+ more nodes" in pic.text
