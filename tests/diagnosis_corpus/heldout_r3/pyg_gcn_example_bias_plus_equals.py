"""Node classification with the GCN layer of PyG's "Creating message passing networks" tutorial
(self-loops, linear map, symmetric normalisation, aggregation, final bias), aggregating with "max".

Rewritten from pyg-team/pytorch_geometric#8953 ("Inplace operation in message passing example"):
"contains an inplace operation at `out += self.bias` which actually makes torch fail in some
cases". The maintainer answered "Thanks. Fixed :)" (PR #8958, "Drop in-place op in GNN example":
`out = out + self.bias`). With a max aggregation, PyG's scatter (scatter_reduce "amax") keeps its
output for the backward, and the bias is then added into that very output.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "pyg-team/pytorch_geometric#8953"
CATEGORY = "inplace"
CULPRIT = None
CAUSE = "the layer adds its bias in place into the max aggregation's saved output"
FIX_KIND = "out-of-place"
ERROR = "inplace"
INTENT = "The node classification loss trains both GCN layers (their linear maps and their biases)."
GRADS = "model.parameters()"

class GCNConv(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.lin = nn.Linear(in_channels, out_channels, bias=False)
        self.bias = nn.Parameter(torch.full((out_channels,), 0.1))

    def forward(self, x, edge_index):
        loops = torch.arange(x.size(0))
        row, col = torch.cat([edge_index, torch.stack([loops, loops])], 1)      # step 1: self-loops
        x = self.lin(x)                                                          # step 2
        deg = torch.zeros(x.size(0)).index_add_(0, col, torch.ones(col.numel()))
        norm = deg.pow(-0.5)[row] * deg.pow(-0.5)[col]                           # step 3
        msg = norm.view(-1, 1) * x[row]                                          # step 4
        index = col.view(-1, 1).expand_as(msg)
        out = x.new_zeros(x.shape).scatter_reduce_(0, index, msg, reduce="amax", include_self=False)
        out += self.bias  # BUG
        # FIX: out = out + self.bias
        return out

class GCN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1, self.conv2 = GCNConv(8, 16), GCNConv(16, 3)
    def forward(self, x, edge_index):
        return self.conv2(F.relu(self.conv1(x, edge_index)), edge_index)

torch.manual_seed(0)
x, y = torch.randn(10, 8), torch.randint(0, 3, (10,))
edge_index = torch.randint(0, 10, (2, 30))
model = GCN()
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
for epoch in range(2):
    optimizer.zero_grad()
    loss = F.cross_entropy(model(x, edge_index), y)
    loss.backward()
    optimizer.step()
