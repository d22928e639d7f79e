"""STSGCN traffic-flow forecasting (LibCity): spatial-temporal synchronous graph convolution layers
(STSGCL) over the sensor graph, each adding learned temporal and spatial position embeddings to its
input, then a head predicting the next steps' flow at every sensor. Rewritten from
LibCity/Bigscity-LibCity#303 ("STSGCN: RuntimeError: one of the variables needed for gradient
computation has been modified by an inplace operation"): the reporter traced it to the line calling
each layer and "changed it by adding the data.clone() and the model runs well now: `data =
stsgcl_layer(data.clone(), self.adj)`"; the issue was closed with that fix. The thread does not name
the write inside the layer; here the layer adds its position embeddings to its input in place,
overwriting the previous layer's ReLU output that the ReLU's backward needs. The writer is the layer.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "LibCity/Bigscity-LibCity#303"
CATEGORY = "inplace"
CULPRIT = None
CAUSE = "each layer adds its position embedding in place to the previous layer's output"
FIX_KIND = "out-of-place"
ERROR = "inplace"
INTENT = ("The flow-forecasting loss trains every STSGCL layer (its graph convolution and its position "
          "embeddings) and the prediction head.")
GRADS = "model.parameters()"

class STSGCL(nn.Module):
    def __init__(self, T, N, C):
        super().__init__()
        self.temporal_emb = nn.Parameter(torch.randn(1, T, 1, C) * 0.1)
        self.spatial_emb, self.gcn = nn.Parameter(torch.randn(1, 1, N, C) * 0.1), nn.Linear(C, C)

    def forward(self, x, adj):
        x += self.temporal_emb           # position embedding, added to the input in place
        x += self.spatial_emb
        return torch.relu(self.gcn(torch.einsum("nm,btmc->btnc", adj, x)))

class STSGCN(nn.Module):
    def __init__(self, adj, T=4, N=5, C=6, horizon=2):
        super().__init__()
        self.adj, self.input_proj = adj, nn.Linear(1, C)
        self.stsgcl_layers = nn.ModuleList(STSGCL(T, N, C) for _ in range(3))
        self.head = nn.Linear(T * C, horizon)

    def forward(self, x):
        data = torch.relu(self.input_proj(x))
        for stsgcl_layer in self.stsgcl_layers:
            data = stsgcl_layer(data, self.adj)  # BUG
            # FIX: data = stsgcl_layer(data.clone(), self.adj)
        return self.head(data.permute(0, 2, 1, 3).flatten(2))

torch.manual_seed(0)
adj = torch.softmax(torch.randn(5, 5), dim=1)
model = STSGCN(adj)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
for batch in range(2):
    x, y = torch.randn(8, 4, 5, 1), torch.randn(8, 5, 2)     # 4 past steps at 5 sensors, 2 future steps
    loss = F.smooth_l1_loss(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
