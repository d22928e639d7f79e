"""Person re-identification with an AM-softmax classifier and a metric-learning loss on the same
embeddings: the metric loss is backwarded after the optimizer step, through the graph the first
backward retained.

Rewritten from openvinotoolkit/deep-object-reid#12 ("Fixes and AMSoftmax support in pytorchcv
wrapper"): "Seems like now pytorch disables making optimizer.step() between two related backwards,
so I had to move the call of end_iteration()". The metric loss's `backward(retain_graph=True)`
ran in `end_iteration()` after `optimizer.step()`; the merged fix backwards every loss before the
step (the reviewer: the gradients are already computed by `total_loss.backward(...)`).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "openvinotoolkit/deep-object-reid#12"
CATEGORY = "inplace"
CULPRIT = "backbone[2].weight"
CAUSE = "optimizer.step() rewrites a weight the metric loss's backward still needs"
FIX_KIND = "backward-before-step"
ERROR = "inplace"
INTENT = ("Both the classification loss and the metric loss train the backbone and are meant to "
          "add up in one step; the classifier's weights are trained by the classification loss only.")
GRADS = ["backbone.parameters()", "classifier.parameters()"]

torch.manual_seed(0)
backbone = nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 8))
classifier = nn.Linear(8, 5, bias=False)
optimizer = torch.optim.SGD([*backbone.parameters(), *classifier.parameters()], lr=0.05)
for step in range(3):
    imgs, obj_ids = torch.randn(12, 20), torch.arange(12) % 5
    embd = F.normalize(backbone(imgs), dim=1)
    cos = embd @ F.normalize(classifier.weight, dim=1).t()
    total_loss = F.cross_entropy(30.0 * (cos - 0.35 * F.one_hot(obj_ids, 5)), obj_ids)
    same = (obj_ids[:, None] == obj_ids[None]).float()
    ml_loss = ((embd @ embd.t() - same) ** 2).mean()
    optimizer.zero_grad()
    total_loss.backward(retain_graph=True)
    optimizer.step()  # BUG
    # FIX: ml_loss.backward()
    ml_loss.backward()  # BUG
    # FIX: optimizer.step()
