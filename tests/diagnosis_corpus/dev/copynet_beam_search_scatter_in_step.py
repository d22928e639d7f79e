"""Expected-risk training of a copy-generation decoder through its own beam search: each step of the
search scores the target vocabulary and the source tokens together, merges the copy mass of every
source token into its vocabulary entry, and the risk of the final beams, weighted by their softmaxed
scores, is the loss.

Rewritten from allenai/allennlp#2925 ("CopyNet: replace in-place tensor operation with out-of-place
equivalent"): "I was trying to implement an Expected Risk Minimization training regime with the
CopyNet model, which uses the result of the beam search to compute the loss. Turns out there was an
in-place op `Tensor.scatter_` that was used in the step function of the search, making the backwards
pass of training break. This just replaces it with `Tensor.scatter`." (merged). The step function is
the library's, not the user's: the write lands in a slice of the joint log-softmax output, which
log_softmax saved for its backward.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "allenai/allennlp#2925"
CATEGORY = "inplace"
CULPRIT = "log_probs"   # the last step's `gen`, a (2, 8) view of the (2, 11) log-softmax output the graph saved (lead, checked)
CAUSE = "the search step's scatter_ overwrites log-probabilities that log_softmax saved"
FIX_KIND = "out-of-place"
ERROR = "inplace"
INTENT = ("The expected-risk loss over the final beams trains the embedding, the decoder cell, the "
          "output layer and the copy scorer through the scores of the searched sequences.")
GRADS = ["emb.weight", "cell.parameters()", "out.parameters()", "copy_scorer.parameters()"]

torch.manual_seed(0)
V, S, H, K, T = 8, 3, 6, 2, 3
emb, cell, out, copy_scorer = nn.Embedding(V, H), nn.GRUCell(H, H), nn.Linear(H, V), nn.Linear(H, H)
source_ids, source_enc, reference = torch.tensor([3, 5, 6]), torch.randn(S, H), [5, 3, 6]


def take_step(last, h):   # CopyNet's search step: generation and copy scores in one log-softmax
    h = cell(emb(last), h)
    log_probs = F.log_softmax(torch.cat([out(h), h @ copy_scorer(source_enc).t()], -1), -1)
    gen, copy = log_probs[:, :V], log_probs[:, V:]
    for i in range(S):        # add the copy mass of source token i to its entry in the vocabulary
        idx = source_ids[i].expand(len(h), 1)
        combined = torch.logsumexp(torch.cat([gen.gather(1, idx), copy[:, i:i + 1]], -1), -1, keepdim=True)
        gen.scatter_(1, idx, combined)  # BUG
        # FIX: gen = gen.scatter(1, idx, combined)
    return gen, h


h, last, scores, seqs = torch.zeros(1, H), torch.zeros(1, dtype=torch.long), torch.zeros(1), [[]]
for t in range(T):
    log_probs, h = take_step(last, h)
    scores, flat = (scores[:, None] + log_probs).view(-1).topk(K)
    beam, last = flat // V, flat % V
    h, seqs = h[beam], [seqs[b] + [tok] for b, tok in zip(beam.tolist(), last.tolist())]
risk = torch.tensor([1 - sum(a == b for a, b in zip(s, reference)) / T for s in seqs])
loss = (F.softmax(scores, 0) * risk).sum()
loss.backward()
