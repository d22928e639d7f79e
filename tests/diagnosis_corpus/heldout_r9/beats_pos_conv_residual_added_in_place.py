"""Fine-tuning the BEATs audio transformer (microsoft/unilm) for audio classification: patch
features are projected, a convolutional relative positional embedding (`pos_conv`) is added to
them, and a transformer layer and a classification head follow.

Rewritten from microsoft/unilm#999 ("Update L. 116 of backbone.py"): "When fine-tuning the network
for our own problem, we encountered the error RuntimeError: one of the variables needed for
gradient computation has been modified by an inplace operation: [torch.cuda.FloatTensor
[32, 768, 248]]. This seemed to be triggered by the in place operation occurring L. 116. To solve
this we replaced `x += x_conv` by `x = x.clone() + x_conv`." The encoder's `extract_features`
feeds `x.transpose(1, 2)` to the positional convolution, which saves that view of `x` (the
[B, C, T] of the message), then adds the convolution's output into `x` in place.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "microsoft/unilm#999"
CATEGORY = "inplace"
CULPRIT = "x"
CAUSE = "the positional convolution's output is added in place into x, whose view the convolution saved"
FIX_KIND = "out-of-place"
ERROR = "inplace"
INTENT = ("The classification loss trains (fine-tunes) the whole model: patch projection, positional "
          "convolution, transformer layer and head.")
GRADS = "model.parameters()"

torch.manual_seed(0)
model = nn.ModuleDict(dict(
    patch_embedding=nn.Linear(12, 24), layer_norm=nn.LayerNorm(24), post_extract_proj=nn.Linear(24, 16),
    pos_conv=nn.Sequential(nn.Conv1d(16, 16, kernel_size=5, padding=2, groups=4), nn.GELU()),
    encoder_layer_norm=nn.LayerNorm(16), head=nn.Linear(16, 5),
    layer=nn.TransformerEncoderLayer(16, nhead=2, dim_feedforward=32, dropout=0.0, batch_first=True)))
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
for step in range(2):
    fbank_patches, labels = torch.randn(4, 10, 12), torch.randint(0, 5, (4,))
    features = model["layer_norm"](model["patch_embedding"](fbank_patches))
    x = model["post_extract_proj"](features)
    # TransformerEncoder.extract_features(x, padding_mask=None)
    x_conv = model["pos_conv"](x.transpose(1, 2))
    x_conv = x_conv.transpose(1, 2)
    x += x_conv  # BUG
    # FIX: x = x.clone() + x_conv
    layer_results = model["layer"](model["encoder_layer_norm"](x))
    loss = F.cross_entropy(model["head"](layer_results.mean(dim=1)), labels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
