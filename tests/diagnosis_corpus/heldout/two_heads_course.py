"""Notebook 02's two heads on a shared trunk, each loss backwarded on its own.

The course's own example (notebooks/02_multi_task_losses.ipynb, section "one backward frees the
trunk"), built on the public thread "What does the parameter retain_graph mean in the Variable's
backward() method?" (Stack Overflow): the trunk's saved tensors serve both losses, so the first
backward needs retain_graph=True, or one backward on the sum.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "What does the parameter retain_graph mean in the Variable's backward() method?"
CATEGORY = "course"
CULPRIT = "feats"
CAUSE = "two losses share the trunk's graph in one step"
FIX_KIND = "retain-or-sum"
ERROR = "second time"

torch.manual_seed(0)
trunk = nn.Sequential(nn.Conv2d(1, 2, 3, padding=1), nn.ReLU(), nn.Flatten())
cat_head, car_head = nn.Linear(2 * 6 * 6, 1), nn.Linear(2 * 6 * 6, 1)
params = [*trunk.parameters(), *cat_head.parameters(), *car_head.parameters()]
opt = torch.optim.SGD(params, lr=0.1)
for step in range(2):
    xs, ys = torch.rand(4, 1, 6, 6), torch.randint(0, 2, (4, 2)).float()
    opt.zero_grad()
    feats = trunk(xs)
    loss_cat = F.binary_cross_entropy_with_logits(cat_head(feats).squeeze(1), ys[:, 0])
    loss_car = F.binary_cross_entropy_with_logits(car_head(feats).squeeze(1), ys[:, 1])
    loss_cat.backward()  # BUG
    # FIX: loss_cat.backward(retain_graph=True)
    loss_car.backward()
    opt.step()
