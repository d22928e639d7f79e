"""A spline coupling flow: a transform net predicts the bin widths and heights, and a library
helper splits and scales them before the spline. The in-place division happens in the helper.

Rewritten from bayesiains/nflows#89 ("Inplace operation error"): "one of the variables needed for
gradient computation has been modified by an inplace operation: [...], which is output 0 of
ReluBackward0" from the scaling `unnormalized_widths /= np.sqrt(self.transform_net.hidden_features)`
inside nflows' coupling transform; the reporter's fix replaces it with the out-of-place
`unnormalized_widths = unnormalized_widths / np.sqrt(...)` (and the same for the heights).
The user's own code never writes in place: the write is in the library function.
"""
import math

import torch
import torch.nn as nn


def spline_params(params, num_bins, hidden_features):      # the library's helper (nflows-style)
    unnormalized_widths = params[..., :num_bins]
    unnormalized_heights = params[..., num_bins:]
    unnormalized_widths /= math.sqrt(hidden_features)  # BUG
    # FIX: unnormalized_widths = unnormalized_widths / math.sqrt(hidden_features)
    unnormalized_heights /= math.sqrt(hidden_features)  # BUG
    # FIX: unnormalized_heights = unnormalized_heights / math.sqrt(hidden_features)
    return torch.softmax(unnormalized_widths, -1), torch.softmax(unnormalized_heights, -1)


SOURCE = "bayesiains/nflows#89"
CATEGORY = "inplace"
CULPRIT = "params"
CAUSE = "a library helper divides the net's ReLU output in place"
FIX_KIND = "out-of-place"
ERROR = "inplace"
INTENT = "The flow's negative log-likelihood trains the transform net."
GRADS = "transform_net.parameters()"

torch.manual_seed(0)
num_bins, hidden = 4, 16
transform_net = nn.Sequential(nn.Linear(2, hidden), nn.Tanh(), nn.Linear(hidden, 2 * num_bins), nn.ReLU())
opt = torch.optim.Adam(transform_net.parameters(), lr=1e-3)
for step in range(3):
    x = torch.rand(32, 4)
    params = transform_net(x[:, :2])
    widths, heights = spline_params(params, num_bins, hidden)
    bin_idx = (x[:, 2:3] * num_bins).long().clamp(max=num_bins - 1)
    log_det = (heights.gather(1, bin_idx) / widths.gather(1, bin_idx)).log()
    loss = -(log_det.mean() - 0.5 * (x[:, 3] ** 2).mean())
    opt.zero_grad()
    loss.backward()
    opt.step()
