"""Small autograd programs shared by several test files (imported, never collected)."""
import torch


class Square(torch.autograd.Function):
    """x -> x*x as a custom Function that saves its input (grad_fn name: SquareBackward)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * g


def seed_graph():
    """The graph of seeds 002/004: a -> b = a**2 -> c = b*2 -> d = c.mean(), e = c.sum()."""
    a = torch.tensor([[1.0, 2.0, 3.0, 4.0]], requires_grad=True)
    b = a ** 2
    c = b * 2
    return dict(a=a, b=b, c=c, d=c.mean(), e=c.sum())


def chain(n):
    """x -> x * 1.5 -> ... (n MulBackward0 nodes): (the leaf x, the last tensor)."""
    x = torch.ones(2, requires_grad=True)
    y = x
    for _ in range(n):
        y = y * 1.5
    return x, y
