"""Node classification with DGL's ARMA example: each ARMAConv averages K stacks of T propagation layers.

Rewritten from dmlc/dgl#4202 ("[Example][Bug] Running error on the example case:
example/pytorch/arma"): train_loss.backward() failed with the in-place error on a tensor "which is
output 0 of ReluBackward0". The layer summed its stacks as `output = feats`, then `output += feats`,
writing into the first stack's ReLU output; the fixed example returns
`torch.stack(output).mean(dim=0)`, the same average out of place.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "dmlc/dgl#4202"
CATEGORY = "inplace"
CULPRIT = None
CAUSE = "the stacks are summed in place into the first stack's ReLU output"
FIX_KIND = "out-of-place"
ERROR = "inplace"
INTENT = "The node classification loss trains both ARMA layers: every stack's maps, skips and biases."
GRADS = "model.parameters()"

class ARMAConv(nn.Module):
    def __init__(self, in_dim, out_dim, K=2, T=2):
        super().__init__()
        self.K, self.T = K, T                # stacks, layers per stack
        self.w_0 = nn.ModuleList(nn.Linear(in_dim, out_dim, bias=False) for k in range(K))
        self.w = nn.ModuleList(nn.Linear(out_dim, out_dim, bias=False) for k in range(K))
        self.v = nn.ModuleList(nn.Linear(in_dim, out_dim, bias=False) for k in range(K))
        self.bias = nn.Parameter(torch.full((K, T, 1, out_dim), 0.1))

    def forward(self, src, dst, feats):
        init_feats, output = feats, None
        norm = torch.zeros(feats.size(0)).index_add_(0, dst, torch.ones(dst.numel())).clamp(min=1).pow(-0.5).unsqueeze(1)
        for k in range(self.K):
            feats = init_feats
            for t in range(self.T):
                feats = feats * norm
                feats = torch.zeros_like(feats).index_add_(0, dst, feats[src]) * norm   # update_all(copy_u, sum)
                feats = self.w_0[k](feats) if t == 0 else self.w[k](feats)
                feats += self.v[k](init_feats)
                feats += self.bias[k][t]
                feats = F.relu(feats)
            if output is None:
                output = feats
            else:
                output += feats  # BUG
                # FIX: output = output + feats
        return output / self.K

torch.manual_seed(0)
src, dst = torch.randint(0, 12, (2, 40))
feats, labels = torch.randn(12, 6), torch.randint(0, 3, (12,))
model = nn.ModuleList([ARMAConv(6, 16), ARMAConv(16, 3)])       # ARMA4NC: conv1, conv2
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
for epoch in range(2):
    optimizer.zero_grad()
    train_loss = F.cross_entropy(model[1](src, dst, F.relu(model[0](src, dst, feats))), labels)
    train_loss.backward()
    optimizer.step()
