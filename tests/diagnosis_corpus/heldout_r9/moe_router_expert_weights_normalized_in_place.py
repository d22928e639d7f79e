"""A mixture-of-experts feed-forward layer in the style of megablocks: a linear router scores
the experts, each token keeps its top-2 experts, the two expert weights are normalized, and the
tokens' outputs are the weighted sum of their experts' outputs; a load-balancing loss on the
router's scores is added to the task loss.

Rewritten from databricks/megablocks#70 ("Change router weight norm from in-place"): with
`moe_normalize_expert_weights` set, the router did
`expert_weights /= torch.norm(expert_weights, p=..., dim=-1, keepdim=True)` and training failed
with "one of the variables needed for gradient computation has been modified by an inplace
operation: [torch.cuda.FloatTensor [8192, 2]], which is output 0 of DivBackward0, is at version 1;
expected version 0" (tokens x top-k). torch.norm saves its input, the top-k weights, for its
backward, and `/=` then overwrites them. The merged change divides out of place:
`expert_weights = expert_weights / torch.norm(expert_weights, p=..., dim=-1, keepdim=True)`.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "databricks/megablocks#70"
CATEGORY = "inplace"
CULPRIT = "expert_weights"
CAUSE = "the top-k expert weights are divided in place by their norm, whose backward saved them"
FIX_KIND = "out-of-place"
ERROR = "inplace"
INTENT = ("The task loss trains the router and the experts; the load-balancing loss trains the router "
          "towards an even use of the experts. Both are summed into one backward.")
GRADS = ["router.parameters()", "experts.parameters()"]

torch.manual_seed(0)
num_experts, top_k, hidden = 4, 2, 8
router = nn.Linear(hidden, num_experts, bias=False)
experts = nn.ModuleList([nn.Sequential(nn.Linear(hidden, 16), nn.GELU(), nn.Linear(16, hidden))
                         for _ in range(num_experts)])
optimizer = torch.optim.AdamW(list(router.parameters()) + list(experts.parameters()), lr=1e-3)
moe_normalize_expert_weights = 1          # p of the norm, as in the report's configuration

for step in range(2):
    x, target = torch.randn(32, hidden), torch.randn(32, hidden)
    scores = router(x).softmax(dim=-1)
    expert_weights, expert_indices = torch.topk(scores, top_k, dim=-1)
    expert_weights /= torch.norm(expert_weights, p=moe_normalize_expert_weights, dim=-1, keepdim=True)  # BUG
    # FIX: expert_weights = expert_weights / torch.norm(expert_weights, p=moe_normalize_expert_weights, dim=-1, keepdim=True)
    out = torch.zeros_like(x)
    for e, expert in enumerate(experts):
        token, slot = (expert_indices == e).nonzero(as_tuple=True)
        if len(token):
            out = out.index_add(0, token, expert(x[token]) * expert_weights[token, slot, None])
    # Switch-style load balancing: fraction of tokens per expert times mean router probability
    tokens_per_expert = F.one_hot(expert_indices, num_experts).sum(dim=(0, 1)).float() / expert_indices.numel()
    lb_loss = num_experts * (tokens_per_expert * scores.mean(dim=0)).sum()
    loss = F.mse_loss(out, target) + 0.01 * lb_loss
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
