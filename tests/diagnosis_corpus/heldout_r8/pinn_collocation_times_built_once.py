"""A physics-informed network u(x, t) trained on the residual of the heat equation
u_t = k u_xx at random collocation points; the derivatives come from autograd.grad with
create_graph=True, so the collocation points must require grad.

Rewritten from pytorch/pytorch#90158 ("loss.backwards() cannot handle addition?"): the poster
builds the collocation times once, `t = 1 + 3 * torch.rand(20, 1, requires_grad=True)`, and the
second `loss.backward()` fails. The answer in the thread: "this computation `1 + 3 * torch.rand(...`
is not rerun. As a result, due to lack of intermediate values in `t` (as they're freed up in the
previous backward), the error will then occur", while with `t = torch.rand(20, 1,
requires_grad=True)` "t is a leaf tensor ... Therefore, no error will be raised". The fix makes
the shifted, scaled times a leaf that requires grad.
"""
import torch
import torch.nn as nn

SOURCE = "pytorch/pytorch#90158"
CATEGORY = "computed-once"
CULPRIT = "t"
CAUSE = "the collocation times are built once with a graph from a requires_grad tensor"
FIX_KIND = "detach-carried"
ERROR = "second time"
INTENT = ("The PDE-residual and initial-condition losses train the network's weights; the collocation "
          "points x and t are fixed inputs that require grad only so that u_t and u_xx can be taken.")
GRADS = "net.parameters()"


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.stack = nn.Sequential(nn.Linear(2, 10), nn.Tanh(), nn.Linear(10, 10), nn.Tanh(), nn.Linear(10, 1))

    def forward(self, x, t):
        return self.stack(torch.cat([t, x], axis=1))


def grad(u, wrt):
    return torch.autograd.grad(u, wrt, torch.ones_like(u), create_graph=True)[0]


torch.manual_seed(0)
net = Net()
x = torch.FloatTensor(20, 1).uniform_(-1, 1)
x.requires_grad_()
t = 1 + 3 * torch.rand(20, 1, requires_grad=True)  # BUG
# FIX: t = (1 + 3 * torch.rand(20, 1)).requires_grad_()
x0 = torch.linspace(-1, 1, 20).unsqueeze(1)
opt = torch.optim.Adam(net.parameters(), lr=0.01)
for epoch in range(3):
    u = net(x, t)
    u_x = grad(u, x)
    residual = grad(u, t) - 0.1 * grad(u_x, x)
    ic = net(x0, torch.zeros_like(x0)) - torch.sin(torch.pi * x0)
    loss = torch.mean(torch.square(residual)) + torch.mean(torch.square(ic))
    opt.zero_grad()
    loss.backward()
    opt.step()
