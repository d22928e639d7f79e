"""A network that switches every ReLU and Dropout module to in-place after building them.

Rewritten from qianyu-dlut/MVANet#2 ("Training error : Relu variables has been modified by an
inplace operation"): the model's constructor loops over its modules with `m.inplace = True`;
backward then raises "... which is output 0 of ReluBackward0". The reporter traced it to those
lines; the fix is to leave the modules out of place.
"""
import torch
import torch.nn as nn

SOURCE = "qianyu-dlut/MVANet#2"
CATEGORY = "inplace"
CULPRIT = None
CAUSE = "in-place dropout rewrites the ReLU output ReluBackward saved"
FIX_KIND = "out-of-place"
ERROR = "inplace"

torch.manual_seed(0)
net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Dropout(0.2), nn.Linear(16, 1))
for m in net.modules():
    if isinstance(m, (nn.ReLU, nn.Dropout)):
        m.inplace = True  # BUG
        # FIX: m.inplace = False
opt = torch.optim.SGD(net.parameters(), lr=0.1)
for step in range(2):
    x, y = torch.randn(4, 8), torch.randn(4, 1)
    loss = nn.functional.mse_loss(net(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
