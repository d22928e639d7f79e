"""A tiny multi-task setting: 16x16 images that may show a "cat" and/or a "car",
and a network with a shared convolutional trunk and one head per question.

    from helpers.multitask import make_images, CatCarNet, grads, grad_report

    x, y = make_images(64, seed=0)            # x: (64, 1, 16, 16), y: (64, 2) = [cat?, car?]
    net = CatCarNet()                         # trunk: Conv-Conv-Conv, heads: FC-FC-FC each
    feats = net.trunk(x)                      # shared by both heads
    cat_logit, car_logit = net.cat(feats), net.car(feats)

Everything is generated from a seed (no downloads) and small enough to train in
well under a second on one CPU core.
"""
from __future__ import annotations

import torch
import torch.nn as nn

# The two patterns, drawn by hand: '#' is ink.
CAT = ("#.....#",
       "##...##",
       "#######",
       "#.###.#",
       "#######",
       ".#####.")
CAR = ("..######..",
       ".#......#.",
       "##########",
       ".##....##.")


def sprite(rows) -> torch.Tensor:
    return torch.tensor([[1.0 if ch == "#" else 0.0 for ch in row] for row in rows])


def make_images(n: int, seed: int = 0, size: int = 16, noise: float = 0.2):
    """`n` noisy images, each showing a cat with probability 1/2 and a car with probability 1/2
    (independently, at random places). Returns x (n, 1, size, size) and y (n, 2) = [cat?, car?]."""
    g = torch.Generator().manual_seed(seed)
    x = noise * torch.randn(n, 1, size, size, generator=g)
    y = torch.randint(0, 2, (n, 2), generator=g).float()
    for i in range(n):
        for k, pattern in enumerate((CAT, CAR)):
            if y[i, k]:
                s = sprite(pattern)
                h, w = s.shape
                r = int(torch.randint(0, size - h + 1, (1,), generator=g))
                c = int(torch.randint(0, size - w + 1, (1,), generator=g))
                patch = x[i, 0, r:r + h, c:c + w]
                x[i, 0, r:r + h, c:c + w] = torch.maximum(patch, s)
    return x, y


def head(features: int, fcs: int = 3) -> nn.Sequential:
    """FC - FC - FC (`fcs` layers, ReLU between), ending in one logit."""
    sizes = [features] + [16, 8, 4, 4][:fcs - 1] + [1]
    layers = []
    for a, b in zip(sizes, sizes[1:]):
        layers += [nn.Linear(a, b), nn.ReLU()]
    return nn.Sequential(*layers[:-1])


class CatCarNet(nn.Module):
    """Conv - Conv - Conv shared trunk, then two FC - FC - FC heads: "cat?" and "car?".

    `convs` and `fcs` shrink it (CatCarNet(convs=1, fcs=1) draws as a small graph):
    the first conv keeps the 16x16 size, each further conv halves it."""

    def __init__(self, channels: int = 8, size: int = 16, convs: int = 3, fcs: int = 3):
        super().__init__()
        c, layers = channels, []
        for i in range(convs):
            layers += [nn.Conv2d(1 if i == 0 else c, c, 3, stride=1 if i == 0 else 2, padding=1), nn.ReLU()]
        self.trunk = nn.Sequential(*layers, nn.Flatten())
        features = c * (size // 2 ** (convs - 1)) ** 2
        self.cat = head(features, fcs)
        self.car = head(features, fcs)

    def forward(self, x):
        feats = self.trunk(x)
        return self.cat(feats).squeeze(1), self.car(feats).squeeze(1)


def accuracy(net, x, y) -> tuple[float, float]:
    """(cat accuracy, car accuracy) of `net` on (x, y), as floats in [0, 1]."""
    with torch.no_grad():
        cat, car = net(x)
    return (((cat > 0).float() == y[:, 0]).float().mean().item(),
            ((car > 0).float() == y[:, 1]).float().mean().item())


def grads(module: nn.Module) -> dict[str, torch.Tensor | None]:
    """{parameter name: a copy of its .grad, or None}: a snapshot to compare later."""
    return {n: None if p.grad is None else p.grad.detach().clone() for n, p in module.named_parameters()}


def grad_report(parts: dict[str, nn.Module]) -> str:
    """One line per part ({"trunk": net.trunk, ...}): how many of its parameters have a .grad.

    'None' means the gradient was never written (not even zeros)."""
    lines = []
    for name, module in parts.items():
        gs = [p.grad for p in module.parameters()]
        filled = sum(g is not None for g in gs)
        if filled == 0:
            state = "grad None"
        else:
            norm = torch.sqrt(sum((g.double() ** 2).sum() for g in gs if g is not None)).item()
            state = f"grad filled, norm {norm:.4g}" if filled == len(gs) else f"{filled} of {len(gs)} filled"
        lines.append(f"{name:6} {len(gs)} tensors: {state}")
    return "\n".join(lines)


def show_images(x, y, n: int = 8):
    """The first `n` images with their labels, as a matplotlib figure (returned, not shown)."""
    import matplotlib.pyplot as plt

    from .plots import finish

    fig, axes = plt.subplots(1, n, figsize=(1.3 * n, 1.7), dpi=100)
    for i, ax in enumerate(axes):
        ax.imshow(x[i, 0].numpy(), cmap="gray_r", vmin=-0.5, vmax=1.2)
        tags = [name for name, v in zip(("cat", "car"), y[i].tolist()) if v] or ["neither"]
        ax.set_title(" + ".join(tags), fontsize=9)
        ax.axis("off")
    return finish(fig)
