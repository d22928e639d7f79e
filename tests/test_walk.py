"""backward_twice.walk and backward_twice.snapshot: what a walk records (ids and their roles, saved states,
names, the cap), read as plain data, and the formatters of small values."""
import dataclasses
import math
import sys

import pytest
import torch
from autograd_programs import chain, seed_graph

from backward_twice import render
from backward_twice.graph import draw, watch
from backward_twice.snapshot import Role, Saved, SavedState, TensorBox, fmt_bytes, fmt_values
from backward_twice.walk import SavedTensorModified, _unreadable_state, snapshot


# ---------------------------------------------------------------- roles and ids
def test_every_node_id_has_a_role():
    t = seed_graph()
    snap = snapshot(t["d"], t["e"], names=t)
    roles = {snap.tensors[i].name if i in snap.tensors else snap.ops[i].name: snap.role(i)
             for i in [*snap.ops, *snap.tensors]}
    assert roles == {"MeanBackward0": Role.OP, "SumBackward0": Role.OP, "MulBackward0": Role.OP,
                     "PowBackward0": Role.OP, "a": Role.LEAF, "d": Role.OUTPUT, "e": Role.OUTPUT,
                     "b": Role.INTERMEDIATE, "c": Role.INTERMEDIATE}
    assert all(snap.role(dst) is not Role.LEAF for _, dst in snap.edges)   # leaves only feed
    with pytest.raises(KeyError):
        snap.role("no such node")


def test_roles_and_states_are_typed_and_still_read_as_words():
    assert Role.LEAF == "leaf" and f"{Role.OUTPUT}" == "output"
    saved = Saved(slot="self", is_tensor=True, state="freed")      # coerced, so `is` works
    assert saved.state is SavedState.FREED
    with pytest.raises(ValueError):
        Saved(slot="self", is_tensor=True, state="gone")
    with pytest.raises(ValueError):
        TensorBox("x", "x", Role.OP, (1,), "float32", True, False, None)
    t = seed_graph()
    t["d"].backward()
    snap = snapshot(t["e"])
    assert {s.state for _, s in snap.saved_tensors()} == {SavedState.FREED}
    counts = snap.count_by_state()
    assert counts == {"held": 0, "freed": 2} and all(type(k) is str for k in counts)   # prints as words


# ---------------------------------------------------------------- saved states
def test_a_hook_that_reports_a_change_in_place_is_read_as_data_not_words():
    err = SavedTensorModified("any wording at all", saved_version=1, now_version=3)
    assert _unreadable_state(err) == (SavedState.HELD, "version 1 -> 3")
    torch_words = RuntimeError("one of the variables needed for gradient computation has been modified "
                               "by an inplace operation: [torch.FloatTensor [2]] is at version 2; "
                               "expected version 0 instead.")
    assert _unreadable_state(torch_words) == (SavedState.HELD, "version 0 -> 2")
    assert _unreadable_state(RuntimeError("Trying to backward through the graph a second time"))[0] \
        is SavedState.FREED
    assert _unreadable_state(ValueError("hook failed")) == (SavedState.UNREADABLE, "ValueError: hook failed")


def test_snapshot_says_what_changed_since_an_earlier_one_and_takes_its_saved_states():
    t = seed_graph()
    names = {k: t[k] for k in "abce"}
    before = snapshot(t["e"], names=names)
    t["e"].backward()
    after = snapshot(t["e"], names=names)
    assert sorted((op.name, s.slot) for op, s in after.freed_since(before)) == [
        ("MulBackward0", "other"), ("PowBackward0", "self")]
    assert after.freed_since(after) == [] and after.modified_since(before) == []
    assert after.grad_changes_since(before) == ["a.grad: None -> [4, 8, 12, 16] (1, 4)"]   # de/da = 4a
    merged = before.with_saved_from(after)
    assert merged.tensors is before.tensors and merged.edges is before.edges
    assert [s.state for _, s in merged.saved_tensors()] == [s.state for _, s in after.saved_tensors()]
    assert merged.count_by_state() == {"held": 0, "freed": 2} and before.count_by_state()["held"] == 2
    # every field but `ops` is carried over, including any added later
    kept = [f.name for f in dataclasses.fields(before) if f.name != "ops"]
    assert all(getattr(merged, k) == getattr(before, k) for k in kept)


# ---------------------------------------------------------------- the cap
def test_deep_chain_walks_iteratively():
    x, y = chain(5000)
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(200)  # a recursive walk would die here
    try:
        snap = snapshot(y, max_nodes=10_000)
    finally:
        sys.setrecursionlimit(old)
    assert len(snap.ops) == 5000 and not snap.truncated
    assert snap.total_nodes == 5001 and snap.hidden_count == 0


def test_cap_is_configurable_and_the_rest_is_counted():
    _, y = chain(50)
    capped = snapshot(y, max_nodes=10)
    assert capped.truncated and not snapshot(y, max_nodes=51).truncated
    assert capped.hidden_count == 51 - 10 == sum(capped.hidden_by_type.values())


# ---------------------------------------------------------------- formatters
def test_formatters_are_short_and_deterministic():
    assert [fmt_bytes(n) for n in (None, 12, 1536, 3 << 20)] == ["? B", "12 B", "1.5 KiB", "3.0 MiB"]
    assert fmt_values(torch.tensor(-0.0)) == "0"
    assert fmt_values(torch.tensor([1.0, 2.5])) == "[1, 2.5]"
    assert fmt_values(torch.ones(3, 4)) == "(3, 4) norm 3.46"


# ---------------------------------------------------------------- structure and names
def test_seed_graph_structure():
    t = seed_graph()
    snap = snapshot(t["d"], t["e"], names=t)
    assert snap.roots == ["d", "e"]
    assert sorted(op.name for op in snap.ops.values()) == ["MeanBackward0", "MulBackward0", "PowBackward0", "SumBackward0"]
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
    assert {(op.name, s.slot): s.state for op, s in snap.saved_tensors()} == {
        ("PowBackward0", "self"): "held", ("MulBackward0", "other"): "held"}
    pow_self = next(s for s in snap.ops[ids["PowBackward0"]].saved if s.slot == "self")
    assert pow_self.alias == "a" and pow_self.shape == (1, 4) and pow_self.nbytes == 16


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



# ---------------------------------------------------------------- found by fuzzing (tests/test_fuzz_renderer.py)
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



# ---------------------------------------------------------------- changed in place since saved (e.g. by optimizer.step())
def modified_graph():
    w = torch.nn.Parameter(torch.tensor([1.0, 2.0]))
    x = torch.tensor([3.0, 4.0], requires_grad=True)
    y = (w * x).sum()          # MulBackward0 saves w (self) and x (other)
    return w, x, y


def test_modified_saved_tensor_is_held_with_a_note():
    w, x, y = modified_graph()
    snapshot(y, names={"w": w, "x": x})        # an earlier walk: sizes are remembered
    with torch.no_grad():
        w.add_(1.0)                            # what an optimizer step does
    snap = snapshot(y, names={"w": w, "x": x})
    saved = {s.slot: s for _, s in snap.saved_tensors()}
    assert saved["self"].state == "held" and saved["self"].modified == "version 0 -> 1"
    assert saved["self"].shape == (2,) and saved["self"].alias == "w"
    assert saved["other"].modified is None
    assert snap.count_by_state() == {"held": 2, "freed": 0}     # counts unchanged
    text = draw(y, names={"w": w, "x": x}).text
    assert "self (= w): (2,) float32 8 B MODIFIED IN PLACE since saved (version 0 -> 1)" in text
    assert "MODIFIED IN PLACE" in render.to_dot(snap)


def test_modified_without_an_earlier_walk_still_draws():
    w, x, y = modified_graph()
    with torch.no_grad():
        w.mul_(2.0)
    (s,) = [s for _, s in snapshot(y).saved_tensors() if s.modified]
    assert s.slot == "self" and s.shape is None and "size unknown" in s.describe()


def test_watch_reports_the_change_and_backward_really_fails():
    w, x, y = modified_graph()
    with watch(y, names={"w": w, "x": x}, label="step") as seen:
        with torch.no_grad():
            w.sub_(0.5)
    assert "modified in place since saved: 1 saved tensor(s): MulBackward0.self (version 0 -> 1)" in repr(seen)
    try:
        y.backward()
    except RuntimeError as err:
        assert "modified by an inplace operation" in str(err)
    else:
        raise AssertionError("backward should have raised")


def test_freed_still_wins_after_backward():
    w, x, y = modified_graph()
    y.backward()
    with torch.no_grad():
        w.add_(1.0)
    assert snapshot(y).count_by_state() == {"held": 0, "freed": 2}


# ---------------------------------------------------------------- focus=
def _rnn(steps=6):
    """h = tanh(h @ W) `steps` times, loss = h.pow(2).sum() + hs[0].sum(): (W, hs, loss)."""
    W = torch.full((3, 3), 0.1, requires_grad=True)
    h, hs = torch.ones(1, 3), []
    for _ in range(steps):
        h = torch.tanh(h @ W)
        hs.append(h)
    return W, hs, h.pow(2).sum() + hs[0].sum()


def test_focus_records_only_what_feeds_it_and_counts_the_rest():
    W, hs, loss = _rnn()
    snap = snapshot(loss, names={"W": W, "h3": hs[2], "loss": loss}, focus=hs[2])
    # under h3: 3 x (Mm, Tanh) and W; nothing of steps 4-6 or of the loss
    assert sorted(op.name for op in snap.ops.values()) == ["MmBackward0"] * 3 + ["TanhBackward0"] * 3
    assert [t.name for t in snap.tensors.values()] == ["W", "h3"]     # the loss is not drawn
    assert snap.ops["op1"].name == "TanhBackward0" and snap.ops["op1"].produces == ["h3"]  # ids start at the focus
    a = snap.above
    # above h3: steps 4-6 (3 Mm, 3 Tanh), Pow, Sum, Add = 9; beside it: hs[0].sum() = 1
    assert (a.between, a.beside, a.roots, a.focus) == (9, 1, ("loss",), ("h3",))
    assert dict(a.by_type) == {"MmBackward0": 3, "TanhBackward0": 3, "PowBackward0": 1,
                               "SumBackward0": 2, "AddBackward0": 1}
    assert a.headline() == "9 nodes from h3 to loss, 1 beside them"
    h3_box = next(t.id for t in snap.tensors.values() if t.name == "h3")
    assert a.into == (h3_box,)
    # the whole graph is the focused part plus what it counts: nothing silently dropped
    whole = snapshot(loss)
    assert whole.total_nodes == snap.total_nodes + a.between + a.beside == 7 + 10
    text = draw(loss, names={"W": W, "h3": hs[2], "loss": loss}, focus=hs[2]).text
    assert text.splitlines()[0] == ("focus on h3: NOT DRAWN: 9 nodes from h3 to loss, 1 beside them "
                                    "(MmBackward0 x3, TanhBackward0 x3, SumBackward0 x2, AddBackward0 x1, "
                                    "PowBackward0 x1)")


def test_focus_box_is_drawn_under_the_focus_with_its_legend():
    W, hs, loss = _rnn()
    pic = draw(loss, names={"h3": hs[2]}, focus=hs[2])
    h3_box = pic.snapshot.above.into[0]
    assert f"{h3_box} -> above [style=dotted]" in pic.dot
    assert "loss" not in pic.dot and "9 nodes from h3 to out, 1 beside them" in pic.dot
    assert "nodes from the focus to the roots, counted" in pic.dot          # the legend says what it is
    assert "nodes from the focus" not in draw(loss).dot
    assert "<title>above</title>" in pic.svg and f"<title>{h3_box}&#45;&gt;above</title>" in pic.svg


def test_focus_unnamed_tensor_leaf_node_and_several():
    W, hs, loss = _rnn()
    snap = snapshot(loss, focus=hs[4])                     # not named: it is called 'focus'
    assert snap.above.focus == ("focus",) and any(t.name == "focus" for t in snap.tensors.values())
    leaf_only = snapshot(loss, names={"W": W}, focus=W)    # a leaf: only its box is under it
    assert not leaf_only.ops and [t.name for t in leaf_only.tensors.values()] == ["W"]
    assert leaf_only.above.between == snapshot(loss).total_nodes - 1 and leaf_only.above.beside == 0
    node = snapshot(loss, focus=hs[1].grad_fn)             # a grad_fn node
    assert node.above.focus == ("TanhBackward0",) and node.above.into == ("op1",)
    both = snapshot(loss, names={"h2": hs[1], "h5": hs[4]}, focus=[hs[1], hs[4]])
    assert both.above.focus == ("h2", "h5") and len(both.above.into) == 2
    assert len(both.ops) == len(snapshot(loss, focus=hs[4]).ops)   # h2 is under h5: nothing twice
    assert snapshot(loss, focus=loss).above is None       # the root itself: nothing left out


def test_focus_respects_the_cap():
    x, y = chain(50)
    mid = y
    for _ in range(10):
        mid = mid * 2.0
    snap = snapshot(mid, focus=y, max_nodes=5)
    assert snap.above.between == 10 and snap.truncated and snap.hidden_count == 51 - 5


def test_watch_with_focus_marks_what_ran_under_the_focus():
    W, hs, loss = _rnn(4)
    with watch(loss, names={"W": W, "h2": hs[1]}, focus=hs[1]) as w:
        loss.backward()
    assert w.before.above.headline() == w.after.above.headline()
    assert len(w.picture.ran) == len(w.after.ops) + 1     # every drawn op and W's AccumulateGrad ran
    assert "and 7 not drawn" in w.picture.text             # the ops above h2 ran too, and are counted
    assert all(s.state == "freed" for _, s in w.after.saved_tensors())


def test_snapshot_reads_reachability_and_paths_from_its_ids():
    t = seed_graph()
    snap = snapshot(t["d"], t["e"], names=t)
    ids = {op.name: op.id for op in snap.ops.values()}
    leaf = next(i for i, b in snap.tensors.items() if b.role == "leaf")
    assert snap.path(ids["MeanBackward0"], leaf) == [ids["MeanBackward0"], ids["MulBackward0"], ids["PowBackward0"], leaf]
    assert snap.path(ids["MeanBackward0"], ids["SumBackward0"]) == []          # another branch
    assert snap.under([ids["MulBackward0"]]) == {ids["MulBackward0"], ids["PowBackward0"], leaf}
    assert snap.reaching(ids["PowBackward0"]) == {ids[n] for n in ("PowBackward0", "MulBackward0",
                                                                    "MeanBackward0", "SumBackward0")}


def test_is_this_a_leaf_has_one_home():
    """issue 18 §2: one test for "is this a leaf" (backward_twice.walk.is_leaf_node); no other module
    compares a node's type name with "AccumulateGrad"."""
    import pathlib

    from backward_twice import diagnose, diagnosis_picture, modules, walk

    x = torch.ones(2, requires_grad=True)
    y = x.exp()
    assert walk.is_leaf_node(y.grad_fn.next_functions[0][0]) and not walk.is_leaf_node(y.grad_fn)
    assert diagnose.is_leaf_node is walk.is_leaf_node is diagnosis_picture.is_leaf_node
    assert modules.is_leaf_node is walk.is_leaf_node
    root = pathlib.Path(walk.__file__).parent
    tests = [f"{p.relative_to(root)}:{i}" for p in sorted(root.rglob("*.py"))
             for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
             if '"AccumulateGrad"' in line or "'AccumulateGrad'" in line]
    assert len(tests) == 1 and tests[0].startswith("walk.py:"), tests


# ---------------------------------------------------------------- whose memory: autograd.Function
def _kinds(snap, op_name):
    return {s.slot: s.kind for op in snap.ops.values() if op.name == op_name for s in op.saved}


def test_a_functions_own_intermediate_is_not_called_an_input_made_outside_the_graph():
    """An autograd.Function's forward runs without grad: what it made and kept in ctx.saved_tensors
    (a compiled graph's Tanh output) has no grad_fn, like data given to it. Notebook 12's text form
    said "56 B of inputs made outside the graph" for x (24 B) and that Tanh output (32 B). Now an
    input only when a name holds its memory; else "kept by an autograd.Function", not told apart."""
    torch._dynamo.reset()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1))
    xs = torch.randn(2, 3)
    loss = torch.compile(model, backend="aot_eager")(xs).pow(2).mean()
    params = {f"model.{k}": p for k, p in model.named_parameters()}
    snap = snapshot(loss, names={"x": xs, **params})
    assert _kinds(snap, "CompiledFunctionBackward") == {
        "saved_tensors[0]": "input", "saved_tensors[1]": "leaf", "saved_tensors[2]": "function"}
    m = snap.memory()
    assert (m.activations, m.leaves, m.inputs, m.in_function) == (8, 16, 24, 32)
    assert "24 B of inputs made outside the graph" in m.words()
    assert "32 B kept by an autograd.Function, made inside it or given to it (not told apart" in m.words()
    unnamed = snapshot(loss, names=params).memory()            # x not named: not told apart either
    assert (unnamed.inputs, unnamed.in_function) == (0, 56) and "made outside" not in unnamed.words()

    class Scaled(torch.autograd.Function):                     # a custom Function keeps a temporary
        @staticmethod
        def forward(ctx, a):
            tmp = a.exp()
            ctx.save_for_backward(tmp)
            return tmp * 2

        @staticmethod
        def backward(ctx, g):
            tmp, = ctx.saved_tensors
            return g * 2 * tmp

    w = torch.ones(3, requires_grad=True)
    assert _kinds(snapshot(Scaled.apply(w * 1).sum()), "ScaledBackward") == {"saved_tensors[0]": "function"}
    data = torch.ones(3)                                       # an ordinary op's unnamed data: an input
    assert _kinds(snapshot((w * data).sum()), "MulBackward0")["other"] == "input"


def test_values_print_the_same_on_any_cpu():
    # notebook 12's checkpointed block: block.2.weight.grad on an AVX2 and an AVX-512 machine (the
    # small value is made by cancellation, so it keeps the large values' absolute rounding error)
    avx2 = torch.tensor([-1.071, -0.3625, -0.6135, -0.0008713, -1.06, -0.3586, -0.6078, -0.00063030])
    avx512 = avx2.clone()
    avx512[-1] = -0.00063024
    assert fmt_values(avx2) == fmt_values(avx512) == "[-1.07, -0.36, -0.61, -0.0009, -1.06, -0.36, -0.61, -0.0006]"
    # a reordered float32 sum moves a value by about eps x the largest term: never a printed digit
    torch.manual_seed(0)
    for _ in range(200):
        t = torch.randn(6) * 10.0 ** torch.randint(-3, 3, (6,))
        noise = (torch.rand(6) - 0.5) * 2 * 1.2e-7 * t.abs().max()
        assert fmt_values(t) == fmt_values(t + noise) or _near_boundary(t), (t, noise)
    assert fmt_values(torch.tensor([1210.0, 60.26])) == "[1210, 60]"       # no 1.21e+03
    assert fmt_values(torch.tensor(0.0012345)) == "0.00123"


def _near_boundary(t):
    """True when a value of `t` lies within 1e-6 (relative to the largest) of a printed rounding step:
    the only place any rounding rule can change its last digit."""
    from backward_twice.snapshot import _digits_beside

    largest = t.abs().max().item()
    for v in t.tolist():
        d = _digits_beside(v, largest)
        step = 10.0 ** (math.floor(math.log10(abs(v))) - d + 1)
        r = abs(v) / step % 1
        if abs(r - 0.5) * step < 1e-6 * largest:
            return True
    return False
