"""Metric learning with an auxiliary classifier (powerful-benchmarker's TrainWithClassifier): a trunk,
an embedder and a classifier; a contrastive loss on the normalised embeddings and a cross-entropy on
the classifier's logits are summed and backwarded once.

Rewritten from KevinMusgrave/powerful-benchmarker#78 ("Bug due to ReLU(inplace=True) with
TrainWithClassifier"): the error came "from MLP layer of classifier"; the maintainer pointed at the
MLP in architectures/misc_models.py, whose hidden layers each start with nn.ReLU(inplace=True), and
the reporter: "I disable inplace from both embedder and classifier. Problem is solved."; the
maintainer agreed it "only affects memory usage" (labelled a bug). The classifier's first ReLU
rewrites the embeddings themselves, which the metric loss's normalisation saved for its backward.
The order of the two losses (metric loss first) is this program's."""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "KevinMusgrave/powerful-benchmarker#78"
CATEGORY = "inplace"
CULPRIT = "embeddings"
CAUSE = "the classifier MLP's leading ReLU(inplace=True) rewrites the embeddings the metric loss saved"
FIX_KIND = "out-of-place"
ERROR = "inplace"
INTENT = ("The metric loss and the classification loss both train the trunk and the embedder, and the "
          "classification loss also trains the classifier; their gradients add up in one step.")
GRADS = ["trunk.parameters()", "embedder.parameters()", "classifier.parameters()"]


class MLP(nn.Module):          # misc_models.MLP: every hidden layer is a ReLU followed by a Linear
    def __init__(self, layer_sizes, final_relu=False):
        super().__init__()
        layers, n = [], len(layer_sizes) - 1
        for i in range(n):
            if i < (n if final_relu else n - 1):
                layers.append(nn.ReLU(inplace=True))  # BUG
                # FIX: layers.append(nn.ReLU(inplace=False))
            layers.append(nn.Linear(layer_sizes[i], layer_sizes[i + 1]))
        self.net = nn.Sequential(*layers)

    def forward(self, x):
        return self.net(x)


def contrastive(emb, labels, margin=0.5):
    sim = F.normalize(emb, dim=1) @ F.normalize(emb, dim=1).t()
    pos, neg = labels[:, None] == labels[None], labels[:, None] != labels[None]
    return (1 - sim)[pos].mean() + F.relu(sim - margin)[neg].mean()


torch.manual_seed(0)
trunk = nn.Sequential(nn.Linear(12, 16), nn.ReLU())
embedder, classifier = MLP([16, 8]), MLP([8, 8, 3])
optimizer = torch.optim.SGD([*trunk.parameters(), *embedder.parameters(), *classifier.parameters()], lr=0.05)
for it in range(2):
    data, labels = torch.randn(10, 12), torch.arange(10) % 3
    embeddings = embedder(trunk(data))
    metric_loss = contrastive(embeddings, labels)
    classifier_loss = F.cross_entropy(classifier(embeddings), labels)
    optimizer.zero_grad()
    (metric_loss + classifier_loss).backward()
    optimizer.step()
