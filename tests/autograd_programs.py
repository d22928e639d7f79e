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
