"""An autoregressive frame decoder (a TTS-style mel-frame predictor) trained step by step with the
recurrent form of linear attention: each frame's query reads a running key-value memory Si and a
key sum Zi, which the library layer updates and hands back as `state`, and the next-frame loss of
the whole sequence backpropagates once.

Rewritten from idiap/fast-transformers#10 ("Replace inplace operations in recurrent linear
attention"): the recurrent `RecurrentLinearAttention.forward` updated its state with `Zi += K` and
`Si += torch.einsum("nhd,nhm->nhdm", K, value)`, which "cause gradient errors when chaining the
transformer's output to other modules ... one of the variables needed for gradient computation has
been modified by an inplace operation". The maintainer (angeloskath) kept the fast in-place path
only when nothing needs a gradient and otherwise uses "the slow but universal path",
`Zi = Zi + K` and `Si = Si + ...`. The previous step's output einsum saved Si and Zi, which the
next step then updates in place.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "idiap/fast-transformers#10"
CATEGORY = "inplace"
CULPRIT = "state"
CAUSE = "the recurrent attention layer adds to its saved memory state in place"
FIX_KIND = "out-of-place"
ERROR = "inplace"
INTENT = ("The next-frame loss of the whole sequence trains the query-key-value projection and the "
          "output layer, through every step of the recurrent attention memory.")
GRADS = ["qkv.parameters()", "out.parameters()"]


def recurrent_linear_attention(Q, K, V, state=None, eps=1e-6):   # the library layer, reduced
    Q, K = F.elu(Q) + 1, F.elu(K) + 1
    N, H, D = Q.shape
    if state is None:
        Si, Zi = Q.new_zeros((N, H, D, V.shape[-1])), Q.new_zeros((N, H, D))
    else:
        Si, Zi = state
    Zi += K  # BUG
    # FIX: Zi = Zi + K
    Si += torch.einsum("nhd,nhm->nhdm", K, V)  # BUG
    # FIX: Si = Si + torch.einsum("nhd,nhm->nhdm", K, V)
    Z = 1.0 / (torch.einsum("nhd,nhd->nh", Q, Zi) + eps)
    return torch.einsum("nhd,nhdm,nh->nhm", Q, Si, Z), [Si, Zi]


torch.manual_seed(0)
T, N, H, D, n_mels = 6, 3, 2, 4, 8
frames = torch.randn(T, N, n_mels)
qkv, out = nn.Linear(n_mels, 3 * H * D), nn.Linear(H * D, n_mels)
state, predictions = None, []
for t in range(T - 1):
    q, k, v = qkv(frames[t]).view(N, 3, H, D).unbind(1)
    y, state = recurrent_linear_attention(q, k, v, state)
    predictions.append(out(y.reshape(N, H * D)))
loss = F.mse_loss(torch.stack(predictions), frames[1:])
loss.backward()
