"""A VQ autoencoder whose vector-quantization layer updates its codebook in place inside forward
(vqtorch's `inplace_optimizer`, the VQ-STE++ alternated optimization): the codebook loss, with a
commitment term on the encoder's output, is backwarded and stepped in the layer, and the layer then
returns the straight-through estimate for the reconstruction loss.

Rewritten from minyoungg/vqtorch#3 ("retain_graph=True"): training fails with "Trying to backward
through the graph a second time" only when `inplace_optimizer` is used. A user reports that "setting
`retain_graph=True` here [the in-place backward in vq.py] seems working fine" and gives the cause:
"the computation graph for `z` is deleted after the backward pass by inplace optimizer and thus the
main optimizer is unable to do straight-through estimation". Detaching z there would drop the
commitment gradient the encoder should get.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "minyoungg/vqtorch#3"
CATEGORY = "two-backwards"
CULPRIT = "z"
CAUSE = "the layer's in-place codebook backward frees the encoder graph the main loss needs"
FIX_KIND = "keep-graph"
ERROR = "second time"
INTENT = ("The in-place codebook loss trains the codebook and, through its commitment term, the encoder; the "
          "reconstruction loss trains the encoder and decoder through the straight-through estimate.")
GRADS = ["encoder.parameters()", "decoder.parameters()", "vq.codebook.weight"]


class VectorQuant(nn.Module):
    def __init__(self, dim=4, num_codes=8, beta=0.9, inplace_lr=1.0):
        super().__init__()
        self.codebook, self.beta = nn.Embedding(num_codes, dim), beta
        self.inplace_optimizer = torch.optim.SGD(self.codebook.parameters(), lr=inplace_lr)

    def forward(self, z):
        idx = torch.cdist(z, self.codebook.weight).argmin(dim=1)
        z_q = self.codebook(idx)
        loss = self.beta * F.mse_loss(z_q, z.detach()) + (1 - self.beta) * F.mse_loss(z, z_q.detach())
        self.inplace_optimizer.zero_grad()
        loss.backward()  # BUG
        # FIX: loss.backward(retain_graph=True)
        self.inplace_optimizer.step()
        z_q = self.codebook(idx)                    # quantize again with the updated codebook
        return z + (z_q - z).detach()


torch.manual_seed(0)
encoder = nn.Sequential(nn.Linear(10, 16), nn.ReLU(), nn.Linear(16, 4))
decoder = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 10))
vq = VectorQuant()
optimizer = torch.optim.Adam([*encoder.parameters(), *decoder.parameters()], lr=1e-3)
for step in range(2):
    x = torch.randn(16, 10)
    optimizer.zero_grad()
    z = encoder(x)
    recon_loss = F.mse_loss(decoder(vq(z)), x)
    recon_loss.backward()
    optimizer.step()
