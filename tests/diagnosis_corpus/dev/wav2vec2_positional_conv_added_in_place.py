"""Keyword spotting on top of a wav2vec 2.0 encoder: a convolutional feature encoder, a projection,
the encoder's convolutional positional embedding added to the features, and a keyword classifier.

Rewritten from dobby-seo/Wav2Keyword#9 ("replace inplace operation in wav2vec2 module"): with
PyTorch 1.11 "the inplace operation in the `extract_features` function of
`fairseq/models/wav2vec/wav2vec2.py`" raised "one of the variables needed for gradient computation
has been modified by an inplace operation"; the merged fix replaces `x += x_conv` by
`x = x + x_conv`. The positional convolution saved `x` (through its transpose) for its own
backward, and the in-place add wrote over it.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "dobby-seo/Wav2Keyword#9"
CATEGORY = "inplace"
CULPRIT = "x"
CAUSE = "the positional embedding is added in place to features the convolution saved"
FIX_KIND = "out-of-place"
ERROR = "inplace"
INTENT = ("The keyword classification loss trains every part of the model: the feature encoder, "
          "the projection, the positional convolution and the classifier.")
GRADS = ["feature_extractor.parameters()", "post_extract_proj.parameters()", "pos_conv.parameters()",
         "classifier.parameters()"]

torch.manual_seed(0)
feature_extractor = nn.Sequential(nn.Conv1d(1, 8, 10, stride=5), nn.GELU(), nn.Conv1d(8, 8, 4, stride=2), nn.GELU())
layer_norm = nn.LayerNorm(8)
post_extract_proj = nn.Linear(8, 12)
pos_conv = nn.Sequential(nn.Conv1d(12, 12, 5, padding=2, groups=4), nn.GELU())
encoder_norm = nn.LayerNorm(12)
classifier = nn.Linear(12, 4)
modules = [feature_extractor, layer_norm, post_extract_proj, pos_conv, encoder_norm, classifier]
optimizer = torch.optim.Adam([p for m in modules for p in m.parameters()], lr=1e-3)

for step in range(2):
    wav, keyword = torch.randn(3, 1, 160), torch.randint(0, 4, (3,))
    features = layer_norm(feature_extractor(wav).transpose(1, 2))
    x = post_extract_proj(features)
    x_conv = pos_conv(x.transpose(1, 2)).transpose(1, 2)
    x += x_conv  # BUG
    # FIX: x = x + x_conv
    encoded = encoder_norm(x)
    loss = F.cross_entropy(classifier(encoded.mean(dim=1)), keyword)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
