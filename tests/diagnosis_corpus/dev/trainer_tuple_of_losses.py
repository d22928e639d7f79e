"""A trainer that calls backward on each loss of a model returning a tuple of losses.

Rewritten from mosaicml/composer#1240 ("Support sequence of losses in backwards pass"): the
trainer called backward on each individual loss of the tuple, which raised "Trying to backward
through the graph a second time"; the merged fix sums the losses and calls backward once.
"""
import torch
import torch.nn as nn

SOURCE = "mosaicml/composer#1240"
CATEGORY = "two-backwards"
CULPRIT = "features"
CAUSE = "the model's losses share the features of one forward"
FIX_KIND = "retain-or-sum"
ERROR = "second time"

torch.manual_seed(0)
backbone = nn.Sequential(nn.Linear(6, 12), nn.GELU())
cls_head, reg_head = nn.Linear(12, 3), nn.Linear(12, 1)
params = [*backbone.parameters(), *cls_head.parameters(), *reg_head.parameters()]
optimizer = torch.optim.AdamW(params, lr=1e-3)
for step in range(2):
    x, labels, targets = torch.randn(8, 6), torch.randint(0, 3, (8,)), torch.randn(8, 1)
    features = backbone(x)
    outputs = (nn.functional.cross_entropy(cls_head(features), labels),
               nn.functional.mse_loss(reg_head(features), targets))
    optimizer.zero_grad()
    for loss in outputs:  # BUG
        # FIX: for loss in [sum(outputs)]:
        loss.backward()
    optimizer.step()
