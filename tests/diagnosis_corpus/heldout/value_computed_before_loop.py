"""A product of two trained tensors computed once, before the loop, and used in every step.

Rewritten from the PyTorch forum thread "Backpropagation - Graph is reused while it shouldn't":
`y = t @ a` is made once; the second `loss.backward()` raises; replacing `y` by `t @ a` inside
the loop works (the thread's own finding, and the answer's fix).
"""
import torch

SOURCE = "Backpropagation - Graph is reused while it shouldn't"
CATEGORY = "computed-once"
CULPRIT = "y"
CAUSE = "y = t @ a was built once, before the loop; the first backward freed it"
FIX_KIND = "recompute-in-step"
ERROR = "second time"

torch.manual_seed(0)
measure = torch.nn.MSELoss()
x = torch.tensor([1, 0], dtype=torch.float64)
t = torch.eye(2, dtype=torch.float64, requires_grad=True)
a = torch.ones(2, dtype=torch.float64, requires_grad=True)
optimizer = torch.optim.SGD([t, a], lr=0.01)
y = t @ a
for _ in range(3):
    x_out = t @ (x + y)  # BUG
    # FIX: x_out = t @ (x + t @ a)
    loss = measure(x_out, x)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
