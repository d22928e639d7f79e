"""Fine-tuning the BEATs audio transformer (microsoft/unilm) on a small audio-classification
task: patch features are projected, a convolutional relative positional embedding (`pos_conv`)
is added to them, and the transformer layers and a classification head follow.

Rewritten from microsoft/unilm#999 ("Update L. 116 of backbone.py"): "When fine-tuning the network
for our own problem, we encountered the error RuntimeError: one of the variables needed for
gradient computation has been modified by an inplace operation: [torch.cuda.FloatTensor
[32, 768, 248]]. This seemed to be triggered by the in place operation occurring L. 116. To solve
this we replaced `x += x_conv` by `x = x.clone() + x_conv`." The encoder's `extract_features`
feeds `x.transpose(1, 2)` to the positional convolution, which saves that view of `x` for its
backward (the [B, C, T] shape of the message), and then adds the convolution's output into `x`
in place. Nothing in the user's own loop writes in place; the write is in the library's forward.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "microsoft/unilm#999"
CATEGORY = "inplace"
CULPRIT = "x"
CAUSE = "the encoder adds the positional convolution's output in place into x, whose transposed view the convolution saved"
FIX_KIND = "out-of-place"
ERROR = "inplace"
INTENT = ("The classification loss fine-tunes the whole model: patch projection, positional "
          "convolution, transformer layer and head.")
GRADS = "model.parameters()"


class TransformerEncoder(nn.Module):
    def __init__(self, dim=16):
        super().__init__()
        self.pos_conv = nn.Sequential(nn.Conv1d(dim, dim, kernel_size=5, padding=2, groups=4), nn.GELU())
        self.layer_norm = nn.LayerNorm(dim)
        self.layer = nn.TransformerEncoderLayer(dim, nhead=2, dim_feedforward=32, dropout=0.0, batch_first=True)

    def extract_features(self, x, padding_mask=None):
        if padding_mask is not None:
            x[padding_mask] = 0
        x_conv = self.pos_conv(x.transpose(1, 2))
        x_conv = x_conv.transpose(1, 2)
        x += x_conv  # BUG
        # FIX: x = x.clone() + x_conv
        x = self.layer_norm(x)
        return self.layer(x)


class BEATsClassifier(nn.Module):
    def __init__(self, patch_dim=12, dim=16, num_classes=5):
        super().__init__()
        self.patch_embedding = nn.Linear(patch_dim, 24)
        self.layer_norm = nn.LayerNorm(24)
        self.post_extract_proj = nn.Linear(24, dim)
        self.encoder = TransformerEncoder(dim)
        self.head = nn.Linear(dim, num_classes)

    def forward(self, patches, padding_mask=None):
        features = self.layer_norm(self.patch_embedding(patches))
        x = self.post_extract_proj(features)
        x = self.encoder.extract_features(x, padding_mask)
        return self.head(x.mean(dim=1))


torch.manual_seed(0)
model = BEATsClassifier()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
for step in range(2):
    fbank_patches, labels = torch.randn(4, 10, 12), torch.randint(0, 5, (4,))
    loss = F.cross_entropy(model(fbank_patches), labels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
