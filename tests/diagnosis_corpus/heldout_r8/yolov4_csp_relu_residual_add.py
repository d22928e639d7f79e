"""YOLOv4's CSPDarknet53 backbone with the activation switched from Mish to ReLU (`activate='relu'` in CSPDarknet53.py):
each residual block adds its input to the output of a conv + BN + activation unit.
Rewritten from argusswift/YOLOv4-pytorch#247 ("When I set the activate='relu', I met the RuntimeError. (Solved)"): training
fails with "one of the variables needed for gradient computation has been modified by an inplace operation: [torch.cuda.
FloatTensor [12, 512, 13, 13]], which is output 0 of ReluBackward0, is at version 2; expected version 1 instead" (with Mish
it ran). "Finally, I solved the problem by adjust the code `out += residual` -> `out = out + residual` in CSPDarknet53.py";
the maintainer thanked. Mish saves its input for backward, ReLU its output: the `+=` now writes into a saved tensor.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "argusswift/YOLOv4-pytorch#247"
CATEGORY = "inplace"
CULPRIT = "out"
CAUSE = "the residual += writes into the ReLU output that the ReLU saved for its backward"
FIX_KIND = "out-of-place"
ERROR = "inplace"
INTENT = "The detection loss trains the whole backbone and the head; each residual block adds its input to its output."
GRADS = ["stem.parameters()", "blocks.parameters()", "head.parameters()"]


def conv_bn_act(c_in, c_out, k, activate="relu"):
    act = nn.ReLU() if activate == "relu" else nn.Mish()
    return nn.Sequential(nn.Conv2d(c_in, c_out, k, padding=k // 2, bias=False), nn.BatchNorm2d(c_out), act)


def csp_block(c, activate="relu"):  # conv1 (1x1, halves the channels), conv2 (3x3), then the residual add
    return nn.ModuleDict({"conv1": conv_bn_act(c, c // 2, 1, activate), "conv2": conv_bn_act(c // 2, c, 3, activate)})


torch.manual_seed(0)
stem, blocks = conv_bn_act(3, 16, 3), nn.ModuleList([csp_block(16), csp_block(16)])
head = nn.Conv2d(16, 3 * (5 + 2), 1)  # 3 anchors x (box, objectness, 2 classes)
optimizer = torch.optim.SGD([*stem.parameters(), *blocks.parameters(), *head.parameters()], lr=1e-3, momentum=0.9)
for it in range(2):
    imgs, target = torch.randn(2, 3, 16, 16), torch.rand(2, 3 * 7, 16, 16)
    x = stem(imgs)
    for block in blocks:
        residual = x
        out = block["conv2"](block["conv1"](x))
        out += residual  # BUG
        # FIX: out = out + residual
        x = out
    loss = F.binary_cross_entropy_with_logits(head(x), target)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
