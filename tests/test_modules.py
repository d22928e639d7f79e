"""draw(loss, modules=model): nodes grouped by the nn.Module call that made them (recorded with
forward hooks), each group with its saved bytes; runs of identical blocks collapsed past the cap."""
import gc
import re
import weakref

import pytest
import torch
from torch import nn

from helpers.graph import draw
from helpers.modules import record_modules
from helpers.snapshot import GraphInputError
from helpers.walk import snapshot


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
    pic = draw(loss, modules=net)
    labels = re.findall(r"subgraph cluster_\w+ \{\n\t\tlabel=<<B>([^<]*)</B>", pic.dot)
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
    pic = draw(loss, modules=net, max_nodes=100)
    box = re.search(r"&#215;(\d+) Block</B>.*?(\d+) saved tensors each, ([\d.]+ KiB) held", pic.dot)
    assert box is not None and box.group(1) == "7" and box.group(2) == "18"
    labels = re.findall(r"label=<<B>([^<]*)</B>", pic.dot)
    assert "1: Block" in labels and "2: Block" not in labels                 # the first stays open
    assert "collapsed in the picture: 7 x Block (2 ... 8), the same ops each" in pic.text
    assert pic.dot.count("[label=") <= 100 and "<svg" in pic.svg
    assert "leaf 8.conv2.weight" in pic.text                                   # the text stays complete
    uncapped = draw(loss, modules=net)                                         # under the cap: no box
    assert "&#215;" not in uncapped.dot and "8: Block" in uncapped.dot


def test_six_layer_transformer_on_one_screen():
    enc, loss = transformer(6)
    full = draw(loss, modules=enc, max_nodes=2000)
    assert all(f"layers.{i}: TransformerEncoderLayer" in full.dot for i in range(6))
    pic = draw(loss, modules=enc)
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
    pic = draw(loss, modules=enc, max_nodes=80)
    assert "&#215;5 TransformerEncoderLayer" in pic.dot and "layers.1 &#8230; layers.5" in pic.dot
    assert "layers.0: TransformerEncoderLayer" in pic.dot and pic.dot.count("[label=") <= 80
    assert "collapsed in the picture: 5 x TransformerEncoderLayer (layers.1 ... layers.5)" in pic.text
