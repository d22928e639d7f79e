"""Video frame interpolation with IFRNet: a network predicts the middle frame from its two
neighbours; its residual blocks refine the last `side_channels` channels of a feature map in place.

Rewritten from ltkong218/IFRNet#33 ("Error running train_vimeo90k.py"): "one of the variables
needed for gradient computation has been modified by an inplace operation: [torch.cuda.FloatTensor
[6, 32, 112, 112]], which is output 0 of AsStridedBackward0". The maintainer: "This problem has
been solved as https://github.com/ltkong218/IFRNet/pull/31", whose commit "fix error reported from
training scripts ... modified by an inplace operation" changes `ResBlock.forward` from
`out[:, -self.side_channels:, :, :] = self.conv2(out[:, -self.side_channels:, :, :])` to
`... = self.conv2(out[:, -self.side_channels:, :, :].clone())` (and the same for conv4): the
convolution saved a view of `out` as its input, and the assignment writes into that view.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "ltkong218/IFRNet#33"
CATEGORY = "inplace"
CULPRIT = None
CAUSE = "the residual block assigns into the feature map whose slice its convolution saved"
FIX_KIND = "out-of-place"
ERROR = "inplace"
INTENT = ("The reconstruction loss on the interpolated frame trains the whole interpolation network, "
          "both the side-channel convolutions and the full-width ones.")
GRADS = "model.parameters()"


def convrelu(cin, cout, stride=1):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, stride, 1), nn.PReLU(cout))


class ResBlock(nn.Module):
    def __init__(self, in_channels, side_channels):
        super().__init__()
        self.side_channels = side_channels
        self.conv1, self.conv3 = convrelu(in_channels, in_channels), convrelu(in_channels, in_channels)
        self.conv2, self.conv4 = convrelu(side_channels, side_channels), convrelu(side_channels, side_channels)
        self.conv5, self.prelu = nn.Conv2d(in_channels, in_channels, 3, 1, 1), nn.PReLU(in_channels)

    def forward(self, x):
        out = self.conv1(x)
        out[:, -self.side_channels:, :, :] = self.conv2(out[:, -self.side_channels:, :, :])  # BUG
        # FIX: out[:, -self.side_channels:, :, :] = self.conv2(out[:, -self.side_channels:, :, :].clone())
        out = self.conv3(out)
        out[:, -self.side_channels:, :, :] = self.conv4(out[:, -self.side_channels:, :, :])  # BUG
        # FIX: out[:, -self.side_channels:, :, :] = self.conv4(out[:, -self.side_channels:, :, :].clone())
        return self.prelu(x + self.conv5(out))


torch.manual_seed(0)
model = nn.Sequential(convrelu(6, 8, stride=2), ResBlock(8, 4), nn.ConvTranspose2d(8, 3, 4, 2, 1))
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
for step in range(2):
    img0, img1, imgt = torch.rand(2, 3, 8, 8), torch.rand(2, 3, 8, 8), torch.rand(2, 3, 8, 8)
    imgt_pred = model(torch.cat([img0, img1], 1))
    loss = F.l1_loss(imgt_pred, imgt)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
