"""Drill-down (issue 28 §1): focus= a module path draws THE MODULE, the ops made inside its calls, what
comes into it from outside cut at its boundary into one counted box, what lies above it in another;
its text says which path to focus on next."""
import dataclasses
import re
from collections import Counter

import pytest
import torch

import backward_twice as bt
from backward_twice.modules import recording_of
from backward_twice.picture.layout import fits
from backward_twice.snapshot import GraphInputError, Role
from tests import model_zoo as zoo


def small_gpt2(layers=4):
    """GPT-2's shape at toy size, on the CPU (real numbers: backward runs, saved tensors are freed)."""
    torch.manual_seed(0)
    model = zoo.GPT2(vocab=64, ctx=16, d=16, layers=layers, heads=2)
    idx = torch.randint(0, 64, (2, 8))
    logits = zoo._run(model, lambda: model(idx))
    loss = torch.nn.functional.cross_entropy(logits.view(-1, 64), idx.view(-1))
    return model, loss


def every_node(loss):
    return nodes_under([loss.grad_fn])


def nodes_under(starts):
    seen, stack = set(), list(starts)
    while stack:
        fn = stack.pop()
        if fn not in seen:
            seen.add(fn)
            stack.extend(n for n, _ in fn.next_functions if n is not None)
    return seen


def made_inside(loss, model, path):
    """The ops the calls of `path` (and of the modules inside it) made, found here by walking the graph."""
    rec = recording_of(model)
    return [fn for fn in every_node(loss) if (c := rec.owner(fn)) is not None
            and (c.path == path or c.path.startswith(path + "."))]


def focus_next(text):
    """The text form's one 'focus next' line; only notes on what the picture simplified come after it."""
    lines = text.splitlines()
    at = [i for i, line in enumerate(lines) if line.startswith("focus next: ")]
    assert len(at) == 1 and all(line.startswith("picture: ") for line in lines[at[0] + 1:]), text[-600:]
    return lines[at[0]]


def leaves(snap):
    return {t.name for t in snap.tensors.values() if t.role is Role.LEAF}


def test_focus_on_a_module_path_draws_exactly_the_ops_made_inside_it():
    model, loss = small_gpt2()
    inside = made_inside(loss, model, "h.2.attn")
    pic = bt.draw(loss, focus="h.2.attn")
    snap = pic.snapshot
    assert len(inside) > 8
    assert Counter(op.name for op in snap.ops.values()) == Counter(fn.name() for fn in inside)
    assert leaves(snap) == {"h.2.attn.c_attn.weight", "h.2.attn.c_attn.bias",
                            "h.2.attn.c_proj.weight", "h.2.attn.c_proj.bias"}     # its parameters, by name
    # no op of another module: h.2.ln_1, whose output comes in, is the boundary box
    out = snap.outside
    assert out.sources == ("h.2.ln_1 (LayerNorm)",) and out.inputs == 1 and out.scope == "h.2.attn"
    # the boundary: the inputs of those ops made outside it (leaves aside), and every node under them
    crossing = {n for fn in inside for n, _ in fn.next_functions
                if n is not None and n not in set(inside) and type(n).__name__ != "AccumulateGrad"}
    assert out.inputs == len(crossing) and out.before == len(nodes_under(crossing)) - len(crossing)
    # nothing drawn twice, nothing dropped: drawn + the box below + the box above = the whole graph
    drawn = len(snap.ops) + snap.leaf_count
    assert drawn + out.inputs + out.before + snap.above.between + snap.above.beside == len(every_node(loss))
    assert sorted(snap.ops[i].name for i in out.into) == sorted(
        fn.name() for fn in inside if any(n in crossing for n, _ in fn.next_functions))
    assert f"input from h.2.ln_1 (LayerNorm), and {out.before} nodes before it, not drawn" in pic.dot
    assert all(f"\toutside -> {i} [style=dotted]" in pic.dot for i in out.into)     # the box feeds those ops
    assert pic.text.splitlines()[0].startswith("focus on h.2.attn: NOT DRAWN: ")
    into = ", ".join(out.into)
    assert pic.text.splitlines()[1].startswith(f"inside h.2.attn: NOT DRAWN: input from h.2.ln_1 (LayerNorm), and "
                                               f"{out.before} nodes before it, into {into} (")
    assert focus_next(pic.text) == ("focus next: h.2.attn.c_attn (the call inside that saved the most: "
                                    "draw(..., focus='h.2.attn.c_attn') draws its ops)")


def test_the_model_name_may_lead_the_path_and_a_wrong_path_names_close_ones():
    model, loss = small_gpt2()
    plain = bt.draw(loss, focus="h.2.attn")
    for spelling in ("model.h.2.attn", "gpt.h.2.attn"):        # whatever the model's variable is called
        assert bt.draw(loss, focus=spelling).text == plain.text
    with pytest.raises(GraphInputError) as err:
        bt.draw(loss, focus="model.h.2.atn")
    words = str(err.value)
    assert "Did you mean 'h.2.attn'" in words and "'model.h." in words       # close paths, both spellings
    assert "The recorded calls: h.0, h.0.attn, h.0.attn.c_attn" in words
    with pytest.raises(GraphInputError, match="focus='' names no module: draw.loss. draws the whole model"):
        bt.draw(loss, focus="")
    with pytest.raises(GraphInputError, match="focus='heads.b': 'heads.b' is a module of the model, but no call"):
        torch.manual_seed(0)
        net = torch.nn.ModuleDict({"trunk": torch.nn.Linear(3, 3), "heads": torch.nn.ModuleDict(
            {"a": torch.nn.Linear(3, 1), "b": torch.nn.Linear(3, 1)})})
        with bt.record_modules(net):
            y = net["heads"]["a"](net["trunk"](torch.ones(1, 3))).sum()     # head b never runs
        bt.draw(y, focus="heads.b")


def test_module_focus_composes_with_max_nodes_and_hide_params():
    model, loss = small_gpt2()
    inside = made_inside(loss, model, "h.1")          # a whole block: ln_1, attn, ln_2, mlp and its own adds
    whole_pic = bt.draw(loss, focus="h.1")
    whole = whole_pic.snapshot
    assert len(whole.ops) == len(inside) and whole.outside.sources == ("h.0 (GPT2Block)",)
    params = leaves(whole)
    for cap in (1, 5, 12):
        pic = bt.draw(loss, focus="h.1", max_nodes=cap)
        snap = pic.snapshot
        assert focus_next(pic.text) == focus_next(whole_pic.text)      # where to go next: whatever the cap
        # the box of what comes in hangs over the ops it feeds, or, all beyond the cap, over their box;
        # drawn one box per call (the ops picture does not read), over the boxes that hold those ops
        if pic.simplified == 0:
            assert all(f"\toutside -> {i} [style=dotted]" in pic.dot for i in snap.outside.into)
        else:
            assert "one box per module call" in pic.text
            heads = re.findall(r"\toutside -> (\w+) \[style=dotted\]", pic.dot)
            assert heads and all(re.search(rf"^\t+{h} \[label=", pic.dot, re.M) for h in heads)
        assert snap.outside.into or "\toutside -> more [style=dotted]" in pic.dot
        assert len(snap.ops) + snap.leaf_count == cap           # the cap holds, counting the boxes drawn
        # beyond the cap: only what is inside the module (the outside is the boundary box's)
        assert snap.hidden_count == len(inside) + len(params) - cap
        assert snap.above == whole.above and set(snap.outside.into) <= set(snap.ops)
        assert dataclasses.replace(snap.outside, into=()) == dataclasses.replace(whole.outside, into=())
    capped = bt.draw(loss, focus="h.1.attn", max_nodes=3)         # its input enters at its first op: not drawn
    assert not capped.snapshot.outside.into and "\toutside -> more [style=dotted]" in capped.dot
    hidden = bt.draw(loss, focus="h.1", hide_params=True, max_nodes=12).snapshot
    assert leaves(hidden) == set() and set(hidden.params_hidden) <= params and len(hidden.ops) == 12
    assert bt.draw(loss, focus="h.1", hide_params=True).snapshot.params_hidden.__len__() == len(params)


def test_watch_with_a_module_focus_draws_the_module_before_and_after():
    model, loss = small_gpt2()
    inside = made_inside(loss, model, "h.3.mlp")
    with bt.watch(loss, focus="h.3.mlp") as w:
        loss.backward()
    for snap in (w.before, w.after):
        assert len(snap.ops) == len(inside) and snap.outside.sources == ("h.3.ln_2 (LayerNorm)",)
    assert w.after.freed_since(w.before)                     # what backward freed inside the module
    assert focus_next(repr(w)).startswith("focus next: h.3.mlp.")
    view = w.after_view()
    assert "input from h.3.ln_2" in view.dot and fits(view.svg)


def test_module_focus_with_modules_draws_its_children_as_boxes():
    model, loss = small_gpt2()
    pic = bt.draw(loss, modules=model, focus="h.2.attn")
    table = pic.text.splitlines()
    assert table[1].startswith("h.2.attn: CausalSelfAttention:")          # the module focused on is outermost
    assert table[2].startswith("  h.2.attn.c_attn: Linear:") and "h.2: GPT2Block" not in pic.text
    overview = pic.overview(False)
    assert "h.2.attn.c_attn: Linear" in overview or "c_attn: Linear" in overview
    assert "input from h.2.ln_1" in overview
    assert focus_next(pic.text).startswith("focus next: h.2.attn.c_attn (the call inside that saved the most: "
                                           "draw(..., modules=model, focus='h.2.attn.c_attn')")


def test_chains_of_ops_that_saved_no_tensor_fold_into_one_box_or_the_last_line_of_the_op_before():
    """picture/chains.py (Marks.compact): a run of ops that saved no tensor is one dashed box naming
    them, or, when it is the one use of the op before it, that op's last line; the edges go round
    them; the text form still lists every op."""
    from backward_twice import render
    from backward_twice.picture.marks import Marks
    from backward_twice.walk import snapshot
    a = torch.randn(2, 3, requires_grad=True)
    y = (a.view(3, 2).transpose(0, 1) * 2).exp().reshape(6).sum()
    snap = snapshot(y, names={"a": a, "y": y})
    ids = {op.name: i for i, op in snap.ops.items()}
    plain, folded = render.to_dot(snap), render.to_dot(snap, marks=Marks(compact=True))
    view, exp, total = ids["ViewBackward0"], ids["ExpBackward0"], ids["SumBackward0"]
    assert f"chain_{view} [label=" in folded and "View \u2192 Transpose" in folded   # leaf a -> View -> Transpose
    assert "<B>ExpBackward0</B><FONT POINT-SIZE=\"10\">  then Clone \u2192 UnsafeView<I> (no tensor saved)</I>" in folded
    edges = set(re.findall(r"\t(\w+) -> (\w+)", folded))
    assert {("leaf1", f"chain_{view}"), (f"chain_{view}", ids["MulBackward0"]), (exp, total)} <= edges
    assert not any(i in edges_of(folded) for i in (ids["TransposeBackward0"], ids["CloneBackward0"]))
    assert f"\t{view} [label=" in plain and "chain_" not in plain and "then " not in plain   # only when asked
    assert "A \u2192 B: ops in a chain, none saved a tensor" in folded                       # the legend says it


def edges_of(dot):
    return {n for e in re.findall(r"\t(\w+) -> (\w+)", dot) for n in e}


def test_gpt2_attention_reads_at_notebook_width_without_fewer_nodes():
    """issue 28 §1: draw(loss, focus='h.3.attn') on GPT-2 small (full size, meta device) draws the
    module, 35 ops, at 860 px: text at least 11 px, at most 900 px tall, and no node left out (no
    'drawn up to N nodes' picture): its two Linear calls as boxes, the chains of views as lines."""
    case = zoo.gpt2()
    pic = bt.draw(case.loss, focus="model.h.3.attn", names=case.names)
    svg = pic.svg
    assert fits(svg) and pic.simplified in (0, 1)                  # the op-by-op picture or the module's calls
    assert "more nodes not drawn" not in pic.dot and "nearest the output" not in pic.dot
    assert "fewer nodes are drawn" not in pic.text      # and its text does not say so either
    assert len(pic.snapshot.ops) == len(made_inside(case.loss, case.model, "h.3.attn")) == 35
    assert "h.3.attn.c_attn: Linear" in pic.dot and "h.3.attn.c_proj: Linear" in pic.dot
    assert pic.dot.count("BmmBackward0") == 2 and "SafeSoftmaxBackward0" in pic.dot
    assert "input from h.3.ln_1 (LayerNorm), and 187 nodes before it, not drawn" in pic.dot


def test_an_after_view_drawn_by_module_call_says_where_to_focus_next():
    """issue 28 §1: a module overview that cannot be drawn op by op says which path to drill into:
    GPT-2 small's after view, one box per call, names the block whose backward freed the most
    (a freed reference to a weight, such as the tied lm_head's, is not memory returned: it does not count)."""
    case = zoo.gpt2()
    with bt.watch(case.loss, names=case.names) as w:
        case.loss.backward()
    view = w.after_view()
    assert fits(view.svg) and view.text.splitlines()[0] == "after: by module call, what backward freed"
    assert re.fullmatch(r"focus next: h\.\d+ \(the call inside that saved the most: "
                        r"draw\(\.\.\., focus='h\.\d+'\) draws its ops\)", focus_next(view.text))


def test_an_after_view_past_max_nodes_knows_every_size_freed_and_boxes_each_call():
    """issue 28 §1, module-level after view: ResNet-50 (full size, meta device, 338 nodes, more than
    watch's 300) after a full backward is one box per top-level call (stem, layer1 ... layer4, fc), each
    saying what backward freed in bytes: watch read the sizes of the saved tensors past the 300 nodes it
    draws before backward freed them, so no total says 'sizes unknown'."""
    case = zoo.resnet50()
    with bt.watch(case.loss, names=case.names) as w:
        case.loss.backward()
    assert w.before.truncated            # the pair draws 300 nodes; the sizes of all were read
    view = w.after_view()
    assert fits(view.svg) and view.text.splitlines()[0] == "after: by module call, what backward freed"
    for box in ("stem: Sequential", "layer1: Sequential", "layer4: Sequential", "fc: Linear"):
        assert box in view.dot
    table = w.picture.by_module("after").text
    assert "unknown" not in table
    assert re.search(r"\(model\): ResNet50: 477 saved, 0 B held, [\d.]+ MiB freed", table)


def test_a_module_overview_boxes_every_call_even_when_the_ops_are_cut():
    """A packed 2-layer LSTM (378 nodes, over draw's max_nodes=300): draw(modules=) boxes the LSTM
    call with all its saved tensors, not the part of it within the first 300 nodes, and says no node
    is left out of the overview."""
    case = zoo.lstm2()
    pic = bt.draw(case.loss, names=case.names, modules=case.model)
    svg = pic.svg
    assert fits(svg) and pic.form == "calls" and not pic.simplified
    assert "more nodes not drawn" not in pic.dot
    rows = dict(re.findall(r"^ *(\(model\): PackedLSTM|lstm: LSTM): (\d+) saved", pic.text, re.M))
    assert int(rows["(model): PackedLSTM"]) == int(rows["lstm: LSTM"]) + 2    # the head's 2 only outside it
    everything = bt.walk.snapshot(case.loss, max_nodes=5_000)
    assert int(rows["(model): PackedLSTM"]) + 4 == sum(1 for _, s in everything.saved_tensors() if s.is_tensor)


def test_a_vit_after_view_is_by_module_call_top_to_bottom():
    """ViT-B/16 after backward: one box per call, the model's own parameters (cls, pos) beside the ops
    that read them, not pinned below the boxes (which drew arrows upward); ops that saved nothing in a
    chain on one line (View -> Transpose)."""
    case = zoo.vit_b16()
    with bt.watch(case.loss, names=case.names) as w:
        case.loss.backward()
    view = w.after_view()
    assert fits(view.svg) and view.text.splitlines()[0] == "after: by module call, what backward freed"
    assert "encoder: TransformerEncoder" in view.dot and "head: Linear" in view.dot
    assert "style=invis" not in view.dot
