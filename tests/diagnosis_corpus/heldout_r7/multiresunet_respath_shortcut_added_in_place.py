"""MultiResUNet for medical image segmentation: the "ResPath" between encoder and decoder is a
chain of 3x3 conv-BN-ReLU blocks, each with a 1x1 conv-BN shortcut added to its output.

Rewritten from j-sripad/mulitresunet-pytorch#3 ("Inplace operation cus bug"): "Several `+=`
operation will cause `RuntimeError: one of the variables needed for gradient computation has been
modified by an inplace operation`. Simply change them to `a = a + b` will solve the problem." (the
issue was closed with that change). The `+=` writes the shortcut into the ReLU's output, which
the ReLU saved for its own backward.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "j-sripad/mulitresunet-pytorch#3"
CATEGORY = "inplace"
CULPRIT = "out"
CAUSE = "the residual shortcut is added in place to a ReLU output saved for backward"
FIX_KIND = "out-of-place"
ERROR = "inplace"
INTENT = ("The Dice plus cross-entropy loss of the lesion mask trains the encoder, every ResPath "
          "block with its shortcut, and the decoder.")
GRADS = ["encoder.parameters()", "respath.parameters()", "decoder.parameters()"]


def conv_bn(cin, cout, k, act=True):
    layers = [nn.Conv2d(cin, cout, k, padding=k // 2), nn.BatchNorm2d(cout)]
    return nn.Sequential(*layers, nn.ReLU()) if act else nn.Sequential(*layers)


torch.manual_seed(0)
encoder = conv_bn(1, 8, 3)
respath = nn.ModuleList([nn.ModuleList([conv_bn(8, 8, 3), conv_bn(8, 8, 1, act=False)]) for _ in range(3)])
decoder = nn.Conv2d(8, 1, 1)
params = [*encoder.parameters(), *respath.parameters(), *decoder.parameters()]
optimizer = torch.optim.Adam(params, lr=1e-3)
for step in range(2):
    scans, masks = torch.randn(2, 1, 16, 16), (torch.rand(2, 1, 16, 16) > 0.7).float()
    x = encoder(scans)
    for block, shortcut in respath:
        out = block(x)
        out += shortcut(x)  # BUG
        # FIX: out = out + shortcut(x)
        x = out
    logits = decoder(x)
    probs = torch.sigmoid(logits)
    dice = 1 - (2 * (probs * masks).sum() + 1) / (probs.sum() + masks.sum() + 1)
    loss = dice + F.binary_cross_entropy_with_logits(logits, masks)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
