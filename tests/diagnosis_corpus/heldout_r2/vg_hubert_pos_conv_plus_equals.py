"""The audio encoder of VG-HuBERT (visually grounded speech, word discovery): a convolutional
feature extractor, a projection, then a convolutional positional embedding added to the frame
features before the transformer layers; the model is trained to match each utterance with the
image it describes.

Rewritten from jasonppy/word-discovery#4 ("fix inplace operation error", merged): training raised
"one of the variables needed for gradient computation has been modified by an inplace operation:
[torch.cuda.FloatTensor [BS, 768, 399]], which is output 0 of AsStridedBackward0, is at version 1;
expected version 0". The positional convolution saved its input, the transposed view
`x.transpose(1, 2)`, and `x += x_conv` then wrote into the same storage. The fix, in both places
the encoder does this: `# x += x_conv` / `x = x + x_conv`.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "jasonppy/word-discovery#4"
CATEGORY = "inplace"
CULPRIT = None
CAUSE = "x += x_conv writes into the frames the positional convolution saved"
FIX_KIND = "out-of-place"
ERROR = "inplace"
INTENT = ("The audio-visual matching loss trains the whole audio encoder: the feature extractor, the "
          "projection, the positional convolution and the transformer layer.")
GRADS = "encoder.parameters()"


class AudioEncoder(nn.Module):
    def __init__(self, dim=16):
        super().__init__()
        self.feature_extractor = nn.Conv1d(1, 12, kernel_size=10, stride=5)
        self.layer_norm, self.post_extract_proj = nn.LayerNorm(12), nn.Linear(12, dim)
        self.dropout_input = nn.Dropout(0.1)
        self.pos_conv = nn.Sequential(nn.Conv1d(dim, dim, kernel_size=5, padding=2, groups=4), nn.GELU())
        self.layer = nn.TransformerEncoderLayer(dim, nhead=2, dim_feedforward=32, dropout=0.0, batch_first=True)

    def forward(self, source):
        features = self.feature_extractor(source.unsqueeze(1)).transpose(1, 2)
        features = self.dropout_input(self.post_extract_proj(self.layer_norm(features)))
        x = features
        x_conv = self.pos_conv(x.transpose(1, 2))
        x_conv = x_conv.transpose(1, 2)
        x += x_conv  # BUG
        # FIX: x = x + x_conv
        return self.layer(x).mean(1)


torch.manual_seed(0)
encoder = AudioEncoder()
optimizer = torch.optim.Adam(encoder.parameters(), lr=1e-4)
for step in range(2):
    audio, image_emb = torch.randn(4, 200), torch.randn(4, 16)
    audio_emb = F.normalize(encoder(audio), dim=-1)
    logits = audio_emb @ F.normalize(image_emb, dim=-1).t() / 0.07
    loss = F.cross_entropy(logits, torch.arange(4))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
