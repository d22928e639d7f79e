"""Unit tests of helpers.multitask: the cat/car data and network, gradient reports."""
import torch
import torch.nn.functional as F

from helpers.multitask import CAR, CAT, CatCarNet, accuracy, grad_report, grads, make_images, show_images, sprite


def test_images_are_seeded_and_labelled():
    x, y = make_images(32, seed=3)
    x2, y2 = make_images(32, seed=3)
    assert torch.equal(x, x2) and torch.equal(y, y2)
    assert x.shape == (32, 1, 16, 16) and y.shape == (32, 2)
    assert set(y.unique().tolist()) <= {0.0, 1.0}
    assert not torch.equal(make_images(32, seed=4)[0], x)


def test_a_pattern_is_drawn_only_when_its_label_says_so():
    x, y = make_images(64, seed=0, noise=0.0)
    for i in range(64):
        ink = int(x[i].sum().item())
        # overlapping patterns share pixels (max), so the ink is at most the sum
        most = y[i, 0] * sprite(CAT).sum() + y[i, 1] * sprite(CAR).sum()
        assert ink <= most and (ink > 0) == bool(y[i].any())


def test_network_shapes_full_and_mini():
    x, _ = make_images(4)
    cat, car = CatCarNet()(x)
    assert cat.shape == car.shape == (4,)
    mini = CatCarNet(channels=2, convs=1, fcs=1)
    assert [type(m).__name__ for m in mini.trunk] == ["Conv2d", "ReLU", "Flatten"]
    assert len(mini.cat) == 1 and mini.cat[0].in_features == 2 * 16 * 16
    assert mini.trunk(x).shape == (4, 512)


def test_grads_and_report_tell_none_from_filled():
    x, y = make_images(8)
    net = CatCarNet()
    feats = net.trunk(x)
    F.binary_cross_entropy_with_logits(net.cat(feats).squeeze(1), y[:, 0]).backward()
    g = grads(net)
    assert g["car.0.weight"] is None and g["cat.0.weight"] is not None
    g["cat.0.weight"] += 1                       # a copy: the model's .grad is untouched
    assert not torch.equal(g["cat.0.weight"], net.cat[0].weight.grad)
    report = grad_report({"trunk": net.trunk, "cat": net.cat, "car": net.car}).splitlines()
    assert report[2] == "car    6 tensors: grad None"
    assert report[0].startswith("trunk  6 tensors: grad filled, norm ")


def test_accuracy_and_figure():
    x, y = make_images(16)
    acc = accuracy(CatCarNet(), x, y)
    assert len(acc) == 2 and all(0.0 <= a <= 1.0 for a in acc)
    fig = show_images(x, y, n=4)
    assert len(fig.axes) == 4
