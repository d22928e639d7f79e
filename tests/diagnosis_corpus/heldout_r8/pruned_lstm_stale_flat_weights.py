"""Pruning an LSTM, made permanent, then fine-tuning. From pytorch/pytorch#33618 ("torch.nn.utils.prune.remove prevents
future model training"): the 2nd backward: "Trying to backward through the graph a second time". Maintainer: "`_flat_weights`
will now contain a tensor instead of a parameter ... when `.remove()` is called, there is no `__setattr__()` call"; fix: "add
`model.lstm._apply(lambda x: x)` ... instead of the `.flatten_parameters()`". Torch 1.4's RNN and `prune.remove`, in short."""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "pytorch/pytorch#33618"
CATEGORY = "computed-once"
CULPRIT = "model.lstm._flat_weights"
CAUSE = "the LSTM's weight list keeps the mask*weight tensors computed once at pruning time"
FIX_KIND = "recompute-in-step"
ERROR = "second time"
INTENT = "The loss trains every LSTM and head parameter; the LSTM must use its parameters, not a masked copy made once."
GRADS = "model.parameters()"
NAMES = ["weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"]
class LSTM(nn.Module):  # torch 1.4's RNNBase: forward reads self._flat_weights, updated by __setattr__
    def __init__(self, n_in, n):
        super().__init__()
        for name, shape in zip(NAMES, [(4 * n, n_in), (4 * n, n), (4 * n,), (4 * n,)]):
            setattr(self, name, nn.Parameter(torch.empty(shape).uniform_(-n ** -0.5, n ** -0.5)))
        self._flat_weights = [getattr(self, name) for name in NAMES]
    def __setattr__(self, name, value):
        if "_flat_weights" in self.__dict__ and name in NAMES:
            self._flat_weights[NAMES.index(name)] = value
        super().__setattr__(name, value)
    def flatten_parameters(self):  # packs the weights for cuDNN; returns early on CPU
        pass
    def _apply(self, fn, recurse=True):
        ret = super()._apply(fn, recurse)
        self._flat_weights = [getattr(self, name) for name in NAMES]
        return ret
    def forward(self, x):
        w_ih, w_hh, b_ih, b_hh = self._flat_weights
        h = c = x.new_zeros(x.shape[0], w_hh.shape[1])
        for t in range(x.shape[1]):
            i, f, g, o = (x[:, t] @ w_ih.t() + b_ih + h @ w_hh.t() + b_hh).chunk(4, 1)
            c = f.sigmoid() * c + i.sigmoid() * g.tanh()
            h = o.sigmoid() * c.tanh()
        return h
torch.manual_seed(0)
model = nn.ModuleDict({"lstm": LSTM(8, 8), "linear": nn.Linear(8, 4)})
for p in ["weight_ih_l0", "weight_hh_l0"]:
    mask = (model.lstm._parameters[p].abs() > model.lstm._parameters[p].abs().median()).float().detach()
    orig = model.lstm._parameters.pop(p)  # prune.l1_unstructured: the parameter becomes weight_orig ...
    setattr(model.lstm, p, orig * mask)  # ... and weight = orig * mask (the RNN files it in _flat_weights)
    orig.data = (orig * mask).data  # torch 1.4's prune.remove: weight_orig takes the pruned values ...
    delattr(model.lstm, p)
    model.lstm.register_parameter(p, orig)  # ... and comes back as the parameter, without __setattr__
model.lstm.flatten_parameters()  # BUG
# FIX: model.lstm._apply(lambda x: x)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    model.zero_grad()
    loss = F.mse_loss(model.linear(model.lstm(torch.randn(2, 5, 8))), torch.randn(2, 4))
    loss.backward()
    optimizer.step()
