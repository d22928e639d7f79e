"""A loop that keeps the epoch's running loss as a tensor (`total_loss += loss`) and backwards it.

Rewritten from pytorch/pytorch#6017 ("Update FAQ to make more sense after tensor/variable
merge"): the maintainers' FAQ note on `total_loss += loss`: "total_loss is thus accumulating
Tensors and their gradient history ... To fix this, be sure to convert the per-iteration loss to
a Python number as soon as possible, for example with total_loss += float(loss)" (apaszke: "There's
also loss.item()"). Here the running total is also what the loop backwards, so step 2 raises.
"""
import torch
import torch.nn as nn

SOURCE = "pytorch/pytorch#6017"
CATEGORY = "accumulated-loss"
CULPRIT = "total_loss"
CAUSE = "the running total keeps every earlier step's graph"
FIX_KIND = "accumulate-number"
ERROR = "second time"

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
criterion = nn.MSELoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
total_loss = 0
for i in range(4):
    x, y = torch.randn(6, 4), torch.randn(6, 1)
    loss = criterion(model(x), y)
    total_loss += loss  # BUG
    # FIX: total_loss += loss.item()
    optimizer.zero_grad()
    total_loss.backward()  # BUG
    # FIX: loss.backward()
    optimizer.step()
print(f"mean loss {total_loss / 4:.3f}")
