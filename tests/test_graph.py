"""Unit tests of the graph renderer: structure, freed vs held, depth, cap, bad input, engines."""
import os
import re
import subprocess
import sys

import pytest
import torch
from autograd_programs import Square, chain, seed_graph

from helpers.graph import compare, draw, watch
from helpers.walk import GraphInputError, snapshot


def op_names(snap):
    return [op.name for op in snap.ops.values()]


def saved_states(snap):
    return {(op.name, s.slot): s.state for op in snap.ops.values() for s in op.saved if s.is_tensor}


# ---------------------------------------------------------------- structure
def test_seed_graph_structure():
    t = seed_graph()
    snap = snapshot(t["d"], t["e"], names=t)
    assert snap.roots == ["d", "e"]
    assert sorted(op_names(snap)) == ["MeanBackward0", "MulBackward0", "PowBackward0", "SumBackward0"]
    ids = {op.name: op.id for op in snap.ops.values()}
    # edges run forward: a -> Pow -> Mul -> {Mean, Sum}; named tensors hang off their op
    leaf = next(k for k, v in snap.tensors.items() if v.role == "leaf")
    assert snap.tensors[leaf].name == "a"
    assert (leaf, ids["PowBackward0"]) in snap.edges
    assert (ids["PowBackward0"], ids["MulBackward0"]) in snap.edges
    assert (ids["MulBackward0"], ids["MeanBackward0"]) in snap.edges
    assert (ids["MulBackward0"], ids["SumBackward0"]) in snap.edges
    produced = {op.name: op.produces for op in snap.ops.values()}
    assert produced == {"MeanBackward0": ["d"], "SumBackward0": ["e"],
                        "MulBackward0": ["c"], "PowBackward0": ["b"]}
    # exactly two tensors are saved: Pow saved its input a, Mul saved the constant 2
    assert saved_states(snap) == {("PowBackward0", "self"): "held", ("MulBackward0", "other"): "held"}
    pow_self = next(s for s in snap.ops[ids["PowBackward0"]].saved if s.slot == "self")
    assert pow_self.alias == "a" and pow_self.shape == (1, 4) and pow_self.nbytes == 16


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
        t["b"].grad_fn._saved_self
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
def test_renders_with_no_dot_on_path(tmp_path):
    """Fresh interpreter, PATH without any `dot`: the bundled engine draws, nothing leaks to stderr."""
    code = ("import torch; from helpers.graph import draw\n"
            "a = torch.ones(2, requires_grad=True); s = draw((a * a).sum(), names={'a': a}).svg\n"
            "from helpers import render; print(render.engine(), '<svg' in s, 'PowBackward0' in s or 'MulBackward0' in s)\n")
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
    for word in ("PowBackward0", "MulBackward0", "saved self", "saved other"):
        assert word in via_dot and word in in_process


def test_a_saved_tensor_is_named_after_a_tensor_only_when_it_is_that_tensor():
    """'= feats' when the saved tensor is feats seen the same way; another view of the same
    memory (here ReLU's result, which feats flattens) 'shares memory with feats', never '='."""
    x = torch.randn(2, 3, 4, requires_grad=True)
    h = x.relu()                       # ReluBackward0 saves its result: h itself
    feats = h.flatten(1)               # a view of h's memory, another shape
    w = torch.randn(12, 5, requires_grad=True)
    out = (feats @ w).sum()            # MmBackward0 saves feats (self) and w (mat2)
    snap = snapshot(out, names={"feats": feats, "w": w})
    relu = next(op for op in snap.ops.values() if op.name == "ReluBackward0")
    (result,) = [s for s in relu.saved if s.is_tensor]
    assert (result.alias, result.alias_view) == ("feats", True)
    assert result.describe().startswith("result (shares memory with feats): (2, 3, 4)")
    mm = next(op for op in snap.ops.values() if op.name == "MmBackward0")
    assert {s.slot: s.describe().split(":")[0] for s in mm.saved if s.is_tensor} == {
        "self": "self (= feats)", "mat2": "mat2 (= w)"}
    # a Linear layer saves its weight transposed: the same memory, read as weight.T
    lin = torch.nn.Linear(3, 2)
    y = lin(torch.randn(4, 3, requires_grad=True)).sum()
    addmm = next(op for op in snapshot(y, names={"weight": lin.weight}).ops.values() if op.name == "AddmmBackward0")
    assert [s.describe() for s in addmm.saved if s.slot == "mat2"] == ["mat2 (= weight.T): (3, 2) float32 24 B"]
    sliced = lin.weight[:, :2]                        # same memory, neither the weight nor its .T
    z = sliced.exp().sum()                            # ExpBackward0 saves a new tensor: no alias
    z2 = (sliced * sliced).sum()                      # MulBackward0 saves the slice itself, twice
    assert [s.alias for op in snapshot(z, names={"weight": lin.weight}).ops.values() for s in op.saved
            if s.is_tensor] == [None]
    mul = next(op for op in snapshot(z2, names={"weight": lin.weight}).ops.values() if op.name == "MulBackward0")
    assert [s.alias_note() for s in mul.saved if s.is_tensor] == ["shares memory with weight"] * 2
    bits = lin.weight.detach().view(torch.int32)     # the weight's memory, same shape, read as int32
    sq = (lin.weight * lin.weight).sum()              # MulBackward0 saves the weight itself
    mul3 = next(op for op in snapshot(sq, names={"bits": bits}).ops.values() if op.name == "MulBackward0")
    assert [s.alias_note() for s in mul3.saved if s.is_tensor] == ["shares memory with bits"] * 2
    # both names given: each saved tensor takes the name it is exactly
    snap2 = snapshot(out, names={"feats": feats, "h": h, "w": w})
    relu2 = next(op for op in snap2.ops.values() if op.name == "ReluBackward0")
    assert [s.alias_note() for s in relu2.saved if s.is_tensor] == ["= h"]
    # the picture says the same, and after backward the freed buffer keeps its note
    with watch(out, names={"feats": feats, "w": w}) as seen:
        out.backward()
    dot, text = seen.picture.dot, repr(seen)
    assert "saved result shares memory with feats" in dot and "saved result = feats" not in dot
    assert "held  result (shares memory with feats)" in text and "FREED result (shares memory with feats)" in text
    after = snapshot(out, names={"feats": feats, "w": w})
    relu3 = next(op for op in after.ops.values() if op.name == "ReluBackward0")
    assert [(s.state, s.alias_note()) for s in relu3.saved if s.is_tensor] == [("freed", "shares memory with feats")]


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
    # a.grad = 3 e^(3a) = [60.26, 1210]; h.grad = e^h = [20.09, 403.4]
    assert rows == ["grad: [60.26, 1210]", "retains grad: [20.09, 403.4]"] + ["grad: not kept (non-leaf)"] * 2
