"""A linear layer's summed output is backwarded in a loop, to accumulate its gradients over the
passes; the output is computed once, before the loop.

Rewritten from the PyTorch forum thread "Which is freed, which is not?": Example 1 computes
`y = torch.sum(x(a))` inside `for i in range(100)` and passes, Example 2 moves that line above the
loop and fails with "Trying to backward through the graph a second time". The answer (albanD) walks
through what each graph holds: "y has a graph containing the sum operation and all the graph of
x_out", and `y.backward()` "Go[es] through the whole graph associated with y" and frees its buffers,
so the graph must be rebuilt in each iteration, as Example 1 does.
"""
import torch

SOURCE = "Which is freed, which is not?"
CATEGORY = "computed-once"
CULPRIT = "y"
CAUSE = "y is built once before the loop and backwarded in every iteration"
FIX_KIND = "recompute-in-step"
ERROR = "second time"
INTENT = ("Each pass's summed output trains the linear layer x; the gradients of all the passes "
          "accumulate in x's weight and bias.")
GRADS = "x.parameters()"

torch.manual_seed(0)
x = torch.nn.Linear(3, 3)
a = torch.randn(4, 3)
y = torch.sum(x(a))
for i in range(3):
    y.backward()  # BUG
    # FIX: torch.sum(x(a)).backward()
