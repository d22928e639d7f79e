"""draw(loss, modules=model): nodes grouped by the nn.Module call that made them (recorded with
forward hooks), each group with its saved bytes; runs of identical blocks collapsed past the cap."""
import gc
import re
import weakref

import pytest
import torch
from test_readability import svg_text_px
from torch import nn

from backward_twice import render
from backward_twice.graph import READABLE_WIDTH_PT, draw, svg_width_pt
from backward_twice.modules import SCREEN_PX, record_modules, shown_px
from backward_twice.picture.layout import fits
from backward_twice.snapshot import GraphInputError, fmt_bytes
from backward_twice.walk import snapshot
from helpers.multitask import CatCarNet, make_images


class Block(nn.Module):
    """A ResNet-style block: two conv/BN, a skip connection, made in the block's own forward."""

    def __init__(self, c):
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(c, c, 3, padding=1), nn.BatchNorm2d(c)
        self.conv2, self.bn2 = nn.Conv2d(c, c, 3, padding=1), nn.BatchNorm2d(c)

    def forward(self, x):
        return torch.relu(x + self.bn2(self.conv2(torch.relu(self.bn1(self.conv1(x))))))


def resnet(blocks=4):
    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), *[Block(8) for _ in range(blocks)],
                        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 10))
    with record_modules(net):
        loss = nn.functional.cross_entropy(net(torch.randn(2, 3, 8, 8)), torch.tensor([1, 2]))
    return net, loss


def transformer(layers=6):
    torch.manual_seed(0)
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True),
                                layers, enable_nested_tensor=False)
    with record_modules(enc):
        loss = enc(torch.randn(2, 5, 32)).pow(2).mean()
    return enc, loss


def test_each_node_belongs_to_the_innermost_call_that_made_it():
    net, loss = resnet(2)
    rec = record_modules(net)
    rec.remove()
    with record_modules(net) as rec:
        out = net(torch.randn(2, 3, 8, 8))
    assert rec.owner(out.grad_fn).path == "5" and rec.owner(out.grad_fn).kind == "Linear"   # addmm
    relu = out.grad_fn.next_functions[1][0].next_functions[0][0].next_functions[0][0]      # view <- mean <- relu
    assert relu.name() == "ReluBackward0" and rec.owner(relu).path == "2"                  # the last Block's own relu
    conv = relu.next_functions[0][0].next_functions[1][0].next_functions[0][0]              # add <- bn2 <- conv2
    assert conv.name() == "ConvolutionBackward0" and rec.owner(conv).path == "2.conv2"
    assert rec.owner(conv).parent == ("2", 0)
    assert not net._forward_hooks and not net._forward_pre_hooks                            # removed on exit


def test_resnet_groups_by_block_with_saved_bytes():
    net, loss = resnet(4)
    pic = draw(loss, modules=net, expand=True)
    labels = re.findall(r"subgraph cluster_\w+ \{\n\t+[^\n]*?\blabel=<<B>([^<]*)</B>", pic.dot)   # attributes sorted
    assert labels[0] == "(model): Sequential"
    assert [lab for lab in labels if lab.endswith("Block")] == ["1: Block", "2: Block", "3: Block", "4: Block"]
    snap = snapshot(loss, names=dict(net.named_parameters()), max_nodes=2000)
    held = sum(s.nbytes for _, s in snap.saved_tensors())
    # the text: one line per call, the model's own line counting every saved tensor it made
    model_line = pic.text.splitlines()[1]
    n_model = sum(1 for op, _ in snap.saved_tensors() if op.name not in ("NllLossBackward0", "LogSoftmaxBackward0"))
    assert model_line.startswith("(model): Sequential: ") and f"{n_model} saved" in model_line
    assert "  1: Block: 18 saved" in pic.text and "    1.conv1: Conv2d: 2 saved" in pic.text
    assert "describe" not in pic.text and pic.text.count("leaf 1.conv1.weight") == 1    # parameters named
    assert held > 0 and "<svg" in pic.svg


def test_a_run_of_identical_blocks_past_the_cap_is_one_box():
    net, loss = resnet(8)
    pic = draw(loss, modules=net, max_nodes=100, expand=True)
    box = re.search(r"&#215;(\d+) Block</B>.*?(\d+) saved tensors each, ([\d.]+ KiB) held", pic.dot)
    assert box is not None and box.group(1) == "7" and box.group(2) == "18"
    labels = re.findall(r"label=<<B>([^<]*)</B>", pic.dot)
    assert "1: Block" in labels and "2: Block" not in labels                 # the first stays open
    assert "collapsed when drawn op by op: 7 x Block (2 ... 8), the same ops each" in pic.text
    assert pic.dot.count("[label=") <= 100 and "<svg" in pic.svg
    assert "leaf 8.conv2.weight" in pic.text                                   # the text stays complete
    uncapped = draw(loss, modules=net, expand=True)                            # under the cap: no box
    assert "&#215;" not in uncapped.dot and "8: Block" in uncapped.dot


def test_six_layer_transformer_on_one_screen():
    enc, loss = transformer(6)
    full = draw(loss, modules=enc, max_nodes=2000, expand=True)
    assert all(f"layers.{i}: TransformerEncoderLayer" in full.dot for i in range(6))
    pic = draw(loss, modules=enc, expand=True)
    m = re.search(r"&#215;(\d+) TransformerEncoderLayer</B>.*?layers\.(\d) &#8230; layers\.(\d)", pic.dot)
    # layer 0 differs (its input needs no grad: one saved tensor less), layers 1-5 are identical
    assert m is not None and m.groups() == ("4", "2", "5")
    assert pic.dot.count("[label=") <= 300 and "<svg" in pic.svg
    assert re.search(r"layers\.1: TransformerEncoderLayer: 24 saved, [\d.]+ KiB held", pic.text)


def test_cluster_bytes_follow_backward():
    net, loss = resnet(2)
    before = draw(loss, modules=net)          # a walk before backward records the sizes
    loss.backward()
    pic = draw(loss, modules=net)
    held = re.search(r"1: Block: 18 saved, ([\d.]+ KiB) held", before.text).group(1)
    assert f"1: Block: 18 saved, 0 B held, {held} freed" in pic.text


def test_needs_a_recording_and_holds_no_graph():
    net = nn.Linear(3, 1)
    loss = net(torch.randn(2, 3)).sum()
    with pytest.raises(GraphInputError, match="record_modules"):
        draw(loss, modules=net)
    with pytest.raises(GraphInputError, match="nn.Module"):
        draw(loss, modules="net")
    with pytest.raises(GraphInputError, match="nn.Module"):
        record_modules(loss)
    rec = record_modules(net)                     # kept on: every forward is recorded
    h = net(torch.randn(2, 3, requires_grad=True))
    alive = weakref.ref(h)
    assert rec.owner(h.grad_fn).path == ""
    del h
    gc.collect()
    assert alive() is None                        # the recording keeps no tensor or node alive
    rec.remove()
    assert not net._forward_hooks


def test_when_one_open_block_is_still_too_many_the_whole_run_is_one_box():
    enc, loss = transformer(6)
    pic = draw(loss, modules=enc, max_nodes=80, expand=True)
    assert "&#215;5 TransformerEncoderLayer" in pic.dot and "layers.1 &#8230; layers.5" in pic.dot
    assert "layers.0: TransformerEncoderLayer" in pic.dot and pic.dot.count("[label=") <= 80
    assert "collapsed when drawn op by op: 5 x TransformerEncoderLayer (layers.1 ... layers.5)" in pic.text


# --------------------------------------------------------------------------------
# Readable at notebook width: a branching net as one box per module call
def catcar(images=8):
    """Notebook 02's two-head net (a conv trunk, a cat head and a car head), both losses."""
    torch.manual_seed(0)
    net = CatCarNet()
    x, y = make_images(images, seed=0)
    with record_modules(net):
        cat, car = net(x)
    loss_cat = nn.functional.binary_cross_entropy_with_logits(cat, y[:, 0])
    loss_car = nn.functional.binary_cross_entropy_with_logits(car, y[:, 1])
    return net, x, loss_cat, loss_car


def text_px(pic):
    return svg_text_px(pic.svg)[0]


def test_two_head_net_reads_at_notebook_width():
    net, x, loss_cat, loss_car = catcar()
    ops = draw(loss_cat, loss_car, modules=net, expand=True)       # every op: too wide to read
    assert ops.form == "ops" and svg_width_pt(ops.svg) > READABLE_WIDTH_PT and text_px(ops) < 9
    pic = draw(loss_cat, loss_car, modules=net)
    assert text_px(pic) >= 9 and svg_width_pt(pic.svg) <= READABLE_WIDTH_PT and pic.form == "calls"
    assert pic.text.startswith(ops.text)        # the text form does not change (a last line: where to focus)
    # issue 28: with a row per layer the overview is 939 px tall as drawn (over 900), but its text
    # is larger than the rule's 11 px: shown smaller than drawn, with its rows (layout.at_shown_size);
    # expand=[] asks for the rows, drawn as asked
    assert fits(pic.svg) and ">0: Conv2d</FONT>" in pic.dot and not pic.simplified
    drawn = float(re.search(r'viewBox="[\d.]+ [\d.]+ ([\d.]+)', pic.svg).group(1))
    assert svg_width_pt(pic.svg) < drawn
    rows = draw(loss_cat, loss_car, modules=net, expand=[])
    boxes = re.findall(r'<B>(\w+): Sequential</B></TD></TR><TR><TD COLSPAN="2" ALIGN="LEFT">'
                       r'<FONT POINT-SIZE="10">(\d+) saved, ([\d.]+ \w*B) held', pic.dot)
    assert [b[0] for b in boxes] == ["trunk", "cat", "car"]
    # the trunk's box counts what the trunk alone saves: its graph drawn on its own
    trunk = snapshot(net.trunk(x))
    assert boxes[0][1:] == (str(sum(1 for _ in trunk.saved_tensors())),
                            fmt_bytes(trunk.unique_bytes_by_state()["held"]))
    for layer in ("0: Conv2d", "1: ReLU", "4: Conv2d"):                 # which layer saved what
        assert f">{layer}</FONT>" in rows.dot
    assert "mat2 = 0.weight.T (128, 16) 8.0 KiB" in rows.dot and rows.dot.count("AddmmBackward0") == 0


def test_overview_marks_what_backward_freed_and_which_params_got_grads():
    net, x, loss_cat, loss_car = catcar()
    before = draw(loss_cat, loss_car, modules=net, expand=[])   # a walk before backward records the sizes
    held = re.search(r"<B>car: Sequential</B>.*?(\d+) saved, ([\d.]+ KiB) held", before.dot).groups()
    loss_car.backward()
    pic = draw(loss_cat, loss_car, modules=net, expand=[])
    cat = re.search(r"<B>cat: Sequential</B>(.*?)</TABLE>", pic.dot).group(1)
    car = re.search(r"<B>car: Sequential</B>(.*?)</TABLE>", pic.dot).group(1)
    assert "FREED" not in cat and "0 B held" not in cat and "parameters: no .grad" in cat
    # the car head's 8 saved tensors (3 Linears: mat1, mat2; 2 ReLUs: result), each marked
    assert held[0] == "8" and car.count("<B>FREED</B>") == 8 and "parameters: .grad set" in car
    assert f"8 saved, 0 B held, {held[1]} freed" in car
    assert "saved tensor FREED by backward" in pic.dot           # in the legend, though no op shows it
    assert text_px(pic) >= 9


def test_resnet_and_transformer_read_at_notebook_width():
    net, loss = resnet(4)
    pic = draw(loss, modules=net)
    assert svg_width_pt(draw(loss, modules=net, expand=True).svg) > READABLE_WIDTH_PT
    assert pic.form == "calls" and text_px(pic) >= 9
    # four identical blocks in a row, in the same state: one box, its rows the first block's
    assert "&#215;4 Block: 1 &#8230; 4, the same ops each" in pic.dot
    # (a call's rows listed when they fit 900 px, else its totals only: issue 28)
    assert re.search(r"each: 18 saved(, as listed)?; all 4: 72 saved, [\d.]+ KiB held", pic.dot)
    enc, loss = transformer(6)
    for kw in ({}, {"max_nodes": 80}):                      # 08 draws the default
        ops = draw(loss, modules=enc, expand=True, **kw)    # narrow, but several screens tall
        assert svg_width_pt(ops.svg) <= READABLE_WIDTH_PT and shown_px(ops.svg)[1] > SCREEN_PX
        pic = draw(loss, modules=enc, **kw)
        assert pic.form == "calls" and text_px(pic) >= 9 and shown_px(pic.svg)[1] <= SCREEN_PX, kw
        assert "&#215;5 TransformerEncoderLayer: layers.1 &#8230; layers.5" in pic.dot


def test_a_small_model_is_drawn_op_by_op():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    with record_modules(net):
        loss = net(torch.randn(5, 4)).pow(2).sum()
    pic = draw(loss, modules=net)
    assert pic.form == "ops" and "AddmmBackward0" in pic.dot and text_px(pic) >= 9


def test_expand_opens_one_call_op_by_op():
    net, x, loss_cat, loss_car = catcar()
    pic = draw(loss_cat, loss_car, modules=net, expand=["car"])
    assert pic.form == "calls" and pic.dot.count("AddmmBackward0") == 3     # car's three Linears
    assert "<B>cat: Sequential</B></TD>" in pic.dot and "<B>car: Sequential</B><BR/>" in pic.dot
    with pytest.raises(GraphInputError, match=r"\['car', 'cat', 'trunk'\]; not \['head'\]"):
        draw(loss_cat, loss_car, modules=net, expand=["head"])
    with pytest.raises(GraphInputError, match="modules=model"):
        draw(loss_cat, expand=["car"])


def test_module_totals_count_a_shared_buffer_once_as_the_picture_does():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    with record_modules(net):
        loss = net(torch.randn(5, 4)).pow(2).sum()
    snap = snapshot(loss, names=dict(net.named_parameters()))
    shared = snap.shared_buffers()
    # the real case: the ReLU's output, saved as its result and as the next Linear's mat1
    assert [sorted(f"{op.name}.{s.slot}" for op, s in slots) for slots in shared.values()] == [
        ["AddmmBackward0.mat1", "ReluBackward0.result"]]
    unique, double = snap.unique_bytes_by_state()["held"], snap.bytes_by_state()["held"]
    assert unique < double
    inside = sum(s.nbytes for op, s in snap.saved_tensors() if op.name != "PowBackward0")
    pow_bytes = double - inside
    pic = draw(loss, modules=net)
    model_line = pic.text.splitlines()[1]
    assert model_line.startswith(f"(model): Sequential: {len(list(snap.saved_tensors())) - 1} saved, "
                                 f"{fmt_bytes(unique - pow_bytes)} held (")   # then: its activations
    assert f"counted once: {fmt_bytes(unique)} held" in pic.text      # draw()'s own total
    loss.backward()
    after = draw(loss, modules=net)
    assert f"0 B held, {fmt_bytes(unique - pow_bytes)} freed" in after.text.splitlines()[1]


def test_parts_called_one_by_one_are_one_box_each():
    """Notebook 02 calls net.trunk, net.cat and net.car itself (the model is never called): each
    part is a box. After loss_car.backward() the trunk and the car head are freed, the cat head
    is held: the picture of why loss_cat.backward() still works and a third would not."""
    torch.manual_seed(0)
    net = CatCarNet()
    x, y = make_images(8, seed=0)
    with record_modules(net):
        feats = net.trunk(x)
        loss_cat = nn.functional.binary_cross_entropy_with_logits(net.cat(feats).squeeze(1), y[:, 0])
        loss_car = nn.functional.binary_cross_entropy_with_logits(net.car(feats).squeeze(1), y[:, 1])
    draw(loss_cat, loss_car, modules=net)
    loss_car.backward()
    pic = draw(loss_cat, loss_car, modules=net)
    assert pic.form == "calls" and text_px(pic) >= 9
    boxes = dict(re.findall(r"<B>(\w+): Sequential</B></TD></TR><TR><TD COLSPAN=\"2\" ALIGN=\"LEFT\">"
                            r"<FONT POINT-SIZE=\"10\">\d+ saved, ([^<]*)</FONT>", pic.dot))
    assert list(boxes) == ["trunk", "cat", "car"]
    assert boxes["trunk"].startswith("0 B held, ") and boxes["car"].startswith("0 B held, ")
    assert "freed" not in boxes["cat"]
    assert "grey text: details - shared buffer (counted once)" in pic.dot    # the boxes mark shared slots: explained


class MultiHead(nn.Module):
    """A trunk and `heads` heads, one loss each: the heads, and their losses, side by side."""

    def __init__(self, heads):
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU())
        self.heads = nn.ModuleList([nn.Sequential(nn.Linear(32, 16), nn.ReLU(), nn.Linear(16, 1))
                                    for _ in range(heads)])

    def forward(self, x):
        feats = self.trunk(x)
        return [head(feats).squeeze(1) for head in self.heads]


@pytest.mark.parametrize("heads", [4, 6])
def test_a_trunk_with_many_heads_reads_with_its_branches_stacked(heads):
    torch.manual_seed(0)
    net = MultiHead(heads)
    with record_modules(net):
        outs = net(torch.randn(8, 16))
    y = torch.rand(8, heads)
    loss = sum(nn.functional.binary_cross_entropy_with_logits(o, y[:, i]) for i, o in enumerate(outs))
    pic = draw(loss, modules=net)
    side_by_side = svg_width_pt(render.svg_from_dot(pic.overview(False)))
    assert side_by_side > READABLE_WIDTH_PT                  # one box per call, branches side by side
    stacked = render.svg_from_dot(pic.overview(True))
    assert svg_width_pt(stacked) <= READABLE_WIDTH_PT and "[style=invis]" in pic.overview(True)
    # issue 28: stacked, the overview is over 900 px tall at 860 px. Its compact form (each call's name and
    # totals, chains of ops that saved nothing on one line) fits with 4 heads, and the text says where to
    # look next; with 6 it does not either: the picture drawn is simpler, and the text says so
    assert shown_px(stacked)[1] > 900 and fits(pic.svg)
    if heads == 4:
        assert pic.compact and not pic.simplified and "\nfocus next: trunk " in pic.text
    else:
        assert pic.simplified and "simplified to read at notebook width" in pic.text


def test_a_title_heads_the_text_form_of_a_module_picture():
    """draw(title=...) puts the title first in the text nbval compares, with modules= too."""
    m = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.ReLU(), torch.nn.Linear(3, 1))
    with record_modules(m):
        loss = m(torch.randn(4, 2)).sum()
    assert draw(loss, modules=m, title="the small net").text.splitlines()[0] == "the small net"
    assert draw(loss, modules=m).text.splitlines()[0] != "the small net"


@pytest.mark.parametrize("bad", [False, 5, 1, {"cat": 1}, ["cat", 2]])
def test_expand_takes_true_or_module_paths_and_says_so(bad):
    from backward_twice.snapshot import GraphInputError

    m = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.ReLU(), torch.nn.Linear(3, 1))
    with record_modules(m):
        loss = m(torch.randn(4, 2)).sum()
    with pytest.raises(GraphInputError, match=r"expand= takes True \(every op\) or module paths"):
        draw(loss, modules=m, expand=bad)


@pytest.mark.parametrize("grad_inside", [True, False], ids=["grad_inside_record_modules", "grad_outside"])
def test_a_gradient_penalty_draws_by_module(grad_inside):
    """WGAN-GP's critic loss (issue 28 §2): autograd.grad(create_graph=True) makes double-backward ops,
    among them a TBackward0 whose input op is folded into a module call's box. draw(modules=) raised
    KeyError: 'op31' (transposes.folded_transposes asked the role of a node no longer drawn)."""
    torch.manual_seed(0)
    critic = nn.Sequential(nn.Linear(8, 32), nn.LeakyReLU(0.2), nn.Linear(32, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1))
    real, fake = torch.randn(16, 8), torch.randn(16, 8)
    with record_modules(critic):
        eps = torch.rand(16, 1)
        mixed = (eps * real + (1 - eps) * fake).requires_grad_(True)
        score = critic(mixed)
        if grad_inside:
            grad, = torch.autograd.grad(score.sum(), mixed, create_graph=True)
        loss = critic(fake).mean() - critic(real).mean()
    if not grad_inside:
        grad, = torch.autograd.grad(score.sum(), mixed, create_graph=True)
    loss = loss + 10 * ((grad.norm(2, dim=1) - 1) ** 2).mean()
    pic = draw(loss, modules=critic)
    assert "<svg" in pic.svg and pic.form == "calls"
    # the double-backward ops are drawn (the penalty's path through the critic's backward)
    assert "AddmmBackward0" in pic.text and ("MmBackward0" in pic.text or "TBackward0" in pic.text)
    assert "0.weight" in pic.text


def _mlp():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 2))
    with record_modules(net):
        loss = net(torch.randn(3, 4)).pow(2).sum()
    return net, loss


def test_focus_takes_a_module_path():
    """issue 28 §1, drill-down: focus='2' draws the module at path '2' (the ops its call made, its
    parameters), what comes into it and what lies above it counted, with modules= or without it for
    a recorded model (tests/test_drill_down.py: on a GPT-2)."""
    net, loss = _mlp()
    pic = draw(loss, modules=net, focus="2", expand=True)
    ops = sorted(op.name for op in pic.snapshot.ops.values())
    assert ops == ["AddmmBackward0", "TBackward0"]
    assert "focus on 2: NOT DRAWN: 4 nodes from 2 to out" in pic.text
    assert "inside 2: NOT DRAWN: input from 1 (Tanh), and 4 nodes before it, into op1 (" in pic.text
    plain = draw(loss, focus="2")                  # the model that made loss was recorded: its paths work
    assert sorted(op.name for op in plain.snapshot.ops.values()) == ops
    with pytest.raises(GraphInputError, match=r"focus='9': no module .* The recorded calls: 0, 1, 2, 3, 4"):
        draw(loss, modules=net, focus="9")
    with pytest.raises(GraphInputError, match="names a module path"):
        draw((torch.ones(2, requires_grad=True) * 2).sum(), focus="2")


def test_a_recorded_models_parameters_carry_their_paths():
    """issue 28 §1: 'leaf 1...6' told a learner nothing; a recorded model's parameters are named by path
    in draw and watch (names given still win)."""
    from backward_twice.graph import watch
    net, loss = _mlp()
    assert "leaf 0.weight (8, 4)" in draw(loss).text and "leaf 4.bias (2,)" in draw(loss).text
    assert "leaf w0 (8, 4)" in draw(loss, names={"w0": net[0].weight}).text
    with watch(loss) as w:
        loss.backward()
    assert repr(w).count("leaf 2.weight (8, 8) float32 grad=") == 2 and "TBackward0(2.weight)" in repr(w)


def test_a_module_picture_too_large_to_draw_whole_says_which_path_to_focus_next():
    enc, loss = transformer(6)      # a row per layer is over 900 px tall: each call's totals only
    pic = draw(loss, modules=enc)
    assert ("\nfocus next: layers.1 (the call inside that saved the most: "     # a tie: the first
            "draw(..., modules=model, focus='layers.1') draws its ops)") in pic.text
    assert pic.compact and fits(pic.svg) and "&#215;5 TransformerEncoderLayer" in pic.dot
    torch.manual_seed(0)            # drawn whole, op by op: nothing to say
    net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    with record_modules(net):
        loss = net(torch.randn(5, 4)).pow(2).sum()
    small = draw(loss, modules=net)
    assert small.form == "ops" and "focus next" not in small.text


class MessagePassing(nn.Module):
    """A GNN whose message passing is written in its own forward, between its Linear calls: most of its
    ops (index, index_add, div, relu, each saving tensors) belong to no call inside it."""

    def __init__(self, d=8, layers=3):
        super().__init__()
        self.lins = nn.ModuleList(nn.Linear(d, d) for _ in range(layers))

    def forward(self, x, src, dst):
        deg = torch.zeros(x.shape[0]).index_add(0, dst, torch.ones(dst.shape[0])).clamp(min=1)
        for lin in self.lins:
            x = torch.relu(torch.zeros_like(x).index_add(0, dst, lin(x)[src]) / deg[:, None])
        return x


def test_a_compact_overview_counts_the_ops_between_calls_as_a_call_box_does():
    torch.manual_seed(0)
    net, x = MessagePassing(), torch.randn(10, 8)
    src, dst = torch.randint(0, 10, (30,)), torch.randint(0, 10, (30,))
    with record_modules(net):
        out = net(x, src, dst).sum()

    def runs(dot):
        return [re.sub(r"<[^>]+>", "", lab) for lab in re.findall(r"chain_op\d+ \[label=<(.*?)>\]", dot)]

    # each run of ops between two Linear calls is one box: its ops named in order, their totals in words
    before = runs(draw(out, modules=net).overview(False, True))
    saving = [r for r in before if "saved" in r]
    assert len(saving) == 3, before
    for r in saving:       # index, source, other, result: 4 ops, 5 slots
        assert re.fullmatch(r"Index \u2192 IndexAdd \u2192 Div \u2192 Relu5 saved, [\d.]+ KiB held \(.*\)", r), r
    out.backward()
    after = draw(out, modules=net)
    dot = after.overview(False, True)
    # after backward: what each run freed, '0 B held' left out of the box (the text form keeps it)
    assert sum(bool(re.search(r"5 saved, [\d.]+ (KiB|B) freed", r)) for r in runs(dot)) == 3, runs(dot)
    assert not any("0 B held" in r for r in runs(dot)) and "0 B held" in after.text
    # the legend says what the solid box of totals is; no row of saved tensors is drawn, so no colour of one
    assert "ops outside the module calls, their totals" in dot
    assert "saved tensor FREED by backward" not in dot and "grey text" not in dot
    # every node an edge names is a drawn box (an ordering edge to a folded op is not a bare label)
    for form in (dot, after.overview(True, True)):
        used = {n for a, b in re.findall(r"^\t+(\w+) -> (\w+)", form, re.M) for n in (a, b)}
        assert used <= set(re.findall(r"^\t+(\w+) \[label=", form, re.M))
    assert fits(render.svg_from_dot(dot))
