"""A model that caches two values computed from its parameters on first use (as exact GP posteriors
cache their solves), in training as in evaluation: the second step's loss reads both caches, whose
graphs the first backward freed. Detaching one of them is half a fix."""
import torch
import torch.nn as nn

INTENT = ("The loss trains the scale and the shift of the model; the two cached values are "
          "bookkeeping computed once from them, which no loss trains through.")
GRADS = "model.parameters()"
RULE = "computed-once"
KIND = "detach-carried"     # the cache kept detached (the fix)


class Cached(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale, self.shift = nn.Parameter(torch.ones(3)), nn.Parameter(torch.zeros(3))
        self._a_cache = self._b_cache = None

    def forward(self, x):
        if self._a_cache is None:
            a = self.scale.exp()
            self._a_cache = a  # BUG
            # FIX: self._a_cache = a.detach()
            self._b_cache = self.shift * 2  # BUG
            # FIX: self._b_cache = (self.shift * 2).detach()
        return x * self._a_cache + self._b_cache + self.scale * x


torch.manual_seed(0)
model = Cached()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(2):
    loss = model(torch.randn(5, 3)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
