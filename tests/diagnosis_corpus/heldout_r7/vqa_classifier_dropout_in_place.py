"""Bottom-up top-down attention for visual question answering: question-guided attention over 36
region features, a joint embedding, and a classifier Linear-ReLU-Dropout-Linear trained with
binary cross-entropy against soft answer scores.

Rewritten from BierOne/bottom-up-attention-vqa#6 ("RuntimeError: one of the variables needed for
gradient computation has been modified by an inplace operation: [torch.cuda.FloatTensor
[512, 2048]], which is output 0 of ReluBackward0"): the fix given in the thread, and the issue
closed with it: "model/classifier.py `nn.Dropout(dropout, inplace=True)` should be modified by
`nn.Dropout(dropout, inplace=False)`". The dropout writes into the ReLU output that the ReLU kept
for its own backward.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "BierOne/bottom-up-attention-vqa#6"
CATEGORY = "inplace"
CULPRIT = None
CAUSE = "an in-place dropout in the classifier overwrites the ReLU output saved for backward"
FIX_KIND = "out-of-place"
ERROR = "inplace"
INTENT = ("The soft-score binary cross-entropy trains the question encoder, the attention, the "
          "joint projections and the answer classifier.")
GRADS = ["q_emb.parameters()", "att.parameters()", "v_net.parameters()", "q_net.parameters()", "classifier.parameters()"]

torch.manual_seed(0)
n_words, dim, n_answers = 50, 16, 10
q_emb = nn.EmbeddingBag(n_words, dim)
att = nn.Linear(2 * dim, 1, bias=False)  # softmax over regions: a bias would get no gradient
v_net, q_net = nn.Linear(dim, dim), nn.Linear(dim, dim)
classifier = nn.Sequential(
    nn.Linear(dim, 2 * dim), nn.ReLU(),
    nn.Dropout(0.5, inplace=True),  # BUG
    # FIX: nn.Dropout(0.5, inplace=False),
    nn.Linear(2 * dim, n_answers))
modules = [q_emb, att, v_net, q_net, classifier]
optimizer = torch.optim.Adamax([p for m in modules for p in m.parameters()], lr=2e-3)
for step in range(2):
    regions, question = torch.randn(4, 36, dim), torch.randint(0, n_words, (4, 7))
    answer_scores = torch.rand(4, n_answers).round(decimals=1)
    q = q_emb(question)
    logits_att = att(torch.cat([regions, q[:, None].expand(-1, 36, -1)], dim=2))
    v = (F.softmax(logits_att, dim=1) * regions).sum(1)
    joint = F.relu(q_net(q)) * F.relu(v_net(v))
    logits = classifier(joint)
    loss = F.binary_cross_entropy_with_logits(logits, answer_scores) * n_answers
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
