"""An emulated FP8 linear layer with delayed scaling (NVIDIA's recipe): each forward scales its input by
the amax recorded in a buffer by the previous forward, casts to e4m3 and back, and records this amax.
Rewritten from facebookexperimental/protoquant#25 ("Make FP8 scale computation non-differentiable"):
"When running the FP8 PoC within a training loop, I get an error in the second backward pass ... It
seems there is some unintended differentiation going through the scaling factors. Adding
`torch.no_grad`s fixes the issue for me"; approved ("lg, thanks!"), the repository's `tensor_to_amax`
and `amax_to_scale` carry `@torch.no_grad()`. Computed with grad, the amax kept in the layer's buffer
holds the graph of the previous step's input. The layer is reduced to a straight-through cast.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "facebookexperimental/protoquant#25"
CATEGORY = "carried-state"
CULPRIT = "model[1].fp8_amax_x"
CAUSE = "the amax recorded in a module buffer keeps the graph of the previous step's input"
FIX_KIND = "detach-carried"
ERROR = "second time"
INTENT = ("The regression loss trains both linear layers through the casts; the amax statistics and "
          "the scales computed from them are bookkeeping that no loss trains.")
GRADS = "model.parameters()"
E4M3_MAX_POS, EPS = 448.0, 1e-12


def tensor_to_amax(x):
    return torch.max(torch.abs(x))  # BUG
    # FIX: with torch.no_grad(): return torch.max(torch.abs(x))


def amax_to_scale(amax):
    return E4M3_MAX_POS / torch.clamp(amax, min=EPS)  # BUG
    # FIX: with torch.no_grad(): return E4M3_MAX_POS / torch.clamp(amax, min=EPS)


def to_e4m3_and_back(x):   # straight-through: the value is rounded, the gradient passes unchanged
    return x + (x.clamp(-E4M3_MAX_POS, E4M3_MAX_POS).to(torch.float8_e4m3fn).to(x.dtype) - x).detach()


class Float8Linear(nn.Linear):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.register_buffer("fp8_amax_x", torch.tensor(E4M3_MAX_POS))

    def forward(self, x):
        x_scale = amax_to_scale(self.fp8_amax_x)          # delayed: the previous step's amax
        self.fp8_amax_x = tensor_to_amax(x)               # recorded for the next step
        w_scale = amax_to_scale(tensor_to_amax(self.weight))
        return F.linear(to_e4m3_and_back(x * x_scale) / x_scale, to_e4m3_and_back(self.weight * w_scale) / w_scale, self.bias)


torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), Float8Linear(16, 4))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(3):
    loss = F.mse_loss(model(torch.randn(32, 8)), torch.randn(32, 4))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
