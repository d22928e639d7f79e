"""GAN that steps D's optimizer between D's and G's backwards through one graph.

Rewritten from MorvanZhou/PyTorch-Tutorial#91 ("Update 406_GAN"), the fix for PyTorch 1.5's
"one of the variables needed for gradient computation has been modified by an inplace
operation: [torch.FloatTensor [128, 1]], which is output 0 of TBackward" done by albanD in
pytorch/pytorch#39141: `opt_D.step()` wrote D's weights in place before G's loss went back
through them; both backwards now run before both steps.
"""
import torch
import torch.nn as nn

SOURCE = "MorvanZhou/PyTorch-Tutorial#91"
CATEGORY = "inplace"
CULPRIT = "D[2].weight"
CAUSE = "optimizer step rewrites a weight saved for the second backward"
FIX_KIND = "backward-before-step"
ERROR = "inplace"

torch.manual_seed(0)
G = nn.Sequential(nn.Linear(5, 128), nn.ReLU(), nn.Linear(128, 15))
D = nn.Sequential(nn.Linear(15, 128), nn.ReLU(), nn.Linear(128, 1), nn.Sigmoid())
opt_D = torch.optim.Adam(D.parameters(), lr=1e-4)
opt_G = torch.optim.Adam(G.parameters(), lr=1e-4)
for step in range(3):
    artist_paintings = torch.rand(64, 15)
    G_paintings = G(torch.randn(64, 5))
    prob_artist0 = D(artist_paintings)
    prob_artist1 = D(G_paintings)
    D_loss = -torch.mean(torch.log(prob_artist0) + torch.log(1.0 - prob_artist1))
    G_loss = torch.mean(torch.log(1.0 - prob_artist1))
    opt_D.zero_grad()
    D_loss.backward(retain_graph=True)
    opt_D.step()  # BUG
    # FIX: pass
    opt_G.zero_grad()
    G_loss.backward()
    opt_G.step()  # BUG
    # FIX: opt_D.step(); opt_G.step()
