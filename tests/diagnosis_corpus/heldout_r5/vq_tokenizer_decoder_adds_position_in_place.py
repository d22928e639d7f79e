"""A ViT-VQGAN-style image tokenizer with two decoders: the encoder's patch features are quantized
against a codebook (straight-through), and the same quantized tokens feed two ViT decoders, one
reconstructing the patches and one predicting a second target.

Rewritten from thuanz123/enhancing-transformers#11 ("An inplace operation in the forward
process"): `ViTDecoder.forward` adds its position embedding with `token += self.de_pos_embedding`,
which "may cause the error: RuntimeError: one of the variables needed for gradient computation
has been modified by an inplace operation" when `rec_a = decoder_a(quant)` and
`rec_b = decoder_b(quant)` share `quant`: "quant is modified by the above inplace operation". The
reporter proposed `token = token + self.de_pos_embedding`; the maintainer: "Thank you for catching
this. It should be good now." The second decoder's in-place add rewrites the tokens the first
decoder's layer norm saved.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "thuanz123/enhancing-transformers#11"
CATEGORY = "inplace"
CULPRIT = "quant"
CAUSE = "each decoder adds its position embedding in place to the shared tokens"
FIX_KIND = "out-of-place"
ERROR = "inplace"
INTENT = ("Both reconstruction losses train the encoder through the straight-through tokens and "
          "each trains its own decoder; the codebook loss trains the codebook.")
GRADS = ["encoder.parameters()", "codebook.weight", "decoder_a.parameters()", "decoder_b.parameters()"]


class ViTDecoder(nn.Module):   # enhancing/modules/stage1/layers.py, reduced to one block
    def __init__(self, dim=8, n_tokens=4, out_dim=12):
        super().__init__()
        self.de_pos_embedding = nn.Parameter(torch.randn(1, n_tokens, dim) * 0.02)
        self.norm, self.mlp, self.to_pixel = nn.LayerNorm(dim), nn.Linear(dim, dim), nn.Linear(dim, out_dim)

    def forward(self, token):
        token += self.de_pos_embedding  # BUG
        # FIX: token = token + self.de_pos_embedding
        x = token + self.mlp(self.norm(token))
        return self.to_pixel(x)


torch.manual_seed(0)
encoder, codebook = nn.Linear(12, 8), nn.Embedding(16, 8)
decoder_a, decoder_b = ViTDecoder(), ViTDecoder(out_dim=3)
params = [*encoder.parameters(), *codebook.parameters(), *decoder_a.parameters(), *decoder_b.parameters()]
optimizer = torch.optim.Adam(params, lr=1e-3)
for step in range(2):
    patches, target_b = torch.randn(2, 4, 12), torch.randn(2, 4, 3)
    z = encoder(patches)
    with torch.no_grad():
        idx = torch.cdist(z, codebook.weight.expand(2, -1, -1)).argmin(-1)
    z_q = codebook(idx)
    codebook_loss = F.mse_loss(z_q, z.detach()) + 0.25 * F.mse_loss(z, z_q.detach())
    quant = z + (z_q - z).detach()
    rec_a, rec_b = decoder_a(quant), decoder_b(quant)
    loss = F.mse_loss(rec_a, patches) + F.mse_loss(rec_b, target_b) + codebook_loss
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
