"""Fine-tuning a magnitude-pruned attention classifier with `torch.nn.utils.prune`: the input
projection of a `nn.MultiheadAttention`, its output projection and the classifier are pruned with
`prune.l1_unstructured`, then trained with their masks kept in place.

Rewritten from pytorch/pytorch#69353 ("Pruning `torch.nn.MultiheadAttention` causes RuntimeError"):
the second `loss.backward()` fails with "Trying to backward through the graph a second time". The
diagnosis is in the linked pytorch/pytorch#78109 ("Doesn't work when apply hook on
torch.nn.MultiheadAttention.out_proj"): a pruned parameter is recomputed as `weight_orig *
weight_mask` by a forward pre-hook on its module, but `MultiheadAttention.forward` reads
`self.out_proj.weight` directly without calling `out_proj`, so "when you register a hook to out_proj
under MultiheadAttention, it will never be called"; the suggested fix is to "call those hooks at some
proper places". `out_proj.weight` is thus the product computed once by `prune.l1_unstructured`, with
its graph, and every step backwards through it. The fix here does in the training step what the
hook would do: recompute `out_proj.weight` from `weight_orig` and the mask before each forward.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.nn.utils.prune as prune

SOURCE = "pytorch/pytorch#69353"
CATEGORY = "computed-once"
CULPRIT = "att.out_proj.weight"
CAUSE = "the pruned out_proj weight is computed once, its pre-hook never runs"
FIX_KIND = "recompute-in-step"
ERROR = "second time"
INTENT = ("The classification loss trains the attention layer and the classifier through their pruned "
          "weights (the unpruned entries of weight_orig); the pruning masks stay fixed.")
GRADS = ["att.in_proj_weight_orig", "att.out_proj.weight_orig", "proj.weight_orig"]

torch.manual_seed(0)
att, proj = nn.MultiheadAttention(embed_dim=8, num_heads=2, batch_first=True), nn.Linear(8, 3)
params_to_prune = [(att, "in_proj_weight"), (att.out_proj, "weight"), (proj, "weight")]
for module, name in params_to_prune:
    prune.l1_unstructured(module, name, amount=0.3)
optimizer = torch.optim.SGD([*att.parameters(), *proj.parameters()], lr=0.1)
for step in range(2):
    x, target = torch.randn(4, 5, 8), torch.randint(0, 3, (4, 5))
    attn_output, attn_weights = att(x, x, x)  # BUG
    # FIX: att.out_proj.weight = att.out_proj.weight_orig * att.out_proj.weight_mask; attn_output, attn_weights = att(x, x, x)
    loss = F.cross_entropy(proj(attn_output).reshape(-1, 3), target.reshape(-1))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
