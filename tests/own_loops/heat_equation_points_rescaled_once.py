"""A physics-informed network for the 1-D heat equation u_t = 0.05 u_xx on x in [-1, 1]: the
collocation points are made once, rescaled from [0, 1], and the residual takes u's derivatives
against them with autograd.grad. Training crashes at the second epoch."""
import torch
import torch.nn as nn

INTENT = ("The residual and the boundary loss train the network's weights; the collocation points are "
          "fixed inputs, requiring grad only so that u_t and u_xx can be taken against them.")
GRADS = "net.parameters()"
RULE = "computed-once"
KIND = "detach-carried"

torch.manual_seed(0)
net = nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 1))
opt = torch.optim.Adam(net.parameters(), lr=1e-3)
unit = torch.rand(64, 2, requires_grad=True)
points = unit * torch.tensor([2.0, 1.0]) - torch.tensor([1.0, 0.0])  # BUG
# FIX: points = (unit * torch.tensor([2.0, 1.0]) - torch.tensor([1.0, 0.0])).detach().requires_grad_()
edges = torch.tensor([[-1.0, 0.5], [1.0, 0.5]])
for _epoch in range(2):
    u = net(points)
    du = torch.autograd.grad(u.sum(), points, create_graph=True)[0]
    u_x, u_t = du[:, :1], du[:, 1:]
    u_xx = torch.autograd.grad(u_x.sum(), points, create_graph=True)[0][:, :1]
    loss = ((u_t - 0.05 * u_xx) ** 2).mean() + (net(edges) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
