"""Training an expression encoder so that equivalent expressions embed close together and unequal
ones far apart: the anchor expression is encoded once, and each candidate found by beam search is
then pushed away from it with its own backward and optimizer step.

Rewritten from shihui2010/symbolic_simplifier#3 ("Error on the code (?)"): the loop calls
`self.enforce_encoding(s2=[ne], encoded1=hidden_states, ...)` for every unequal candidate, and the
reporter explains that enforce_encoding back-propagates "through encoder and modify their weights",
so with `hidden_states` reused "it can't back-prop the hidden_states because the weights are
modified" (the in-place error once the first backward keeps the graph, as here). The thread's fix:
`self.enforce_encoding(s1=sample_input, s2=[ne], ...)`, which "calculate[s] the original embedding
every time, with modified encoder".
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "shihui2010/symbolic_simplifier#3"
CATEGORY = "inplace"
CULPRIT = "encoder.gru.weight_hh_l0"
CAUSE = "the anchor's encoding is reused after optimizer steps changed the encoder"
FIX_KIND = "recompute-in-step"
ERROR = "inplace"
INTENT = ("Each candidate's loss trains the encoder through both the anchor's and the candidate's encodings, "
          "each computed with the encoder as it is at that candidate's step.")
GRADS = "encoder.parameters()"


class Encoder(nn.Module):
    def __init__(self, vocab=12, hidden=16):
        super().__init__()
        self.embed, self.gru = nn.Embedding(vocab, hidden), nn.GRU(hidden, hidden)

    def forward(self, tokens):               # tokens: (timesteps, batch)
        return self.gru(self.embed(tokens))[1][-1]


def enforce_encoding(s1=None, s2=None, encoded1=None, positive=True):
    if encoded1 is None:
        encoded1 = encoder(s1)
    similarity = F.cosine_similarity(encoded1, encoder(s2)).mean()
    loss = 1 - similarity if positive else 1 + similarity
    optimizer.zero_grad()
    loss.backward(retain_graph=True)
    optimizer.step()


torch.manual_seed(0)
encoder = Encoder()
optimizer = torch.optim.Adam(encoder.parameters(), lr=1e-2)
sample_input = torch.randint(0, 12, (7, 1))
unequals = [torch.randint(0, 12, (7, 1)) for _ in range(3)]
hidden_states = encoder(sample_input)
for ne in unequals:
    enforce_encoding(s2=ne, encoded1=hidden_states, positive=False)  # BUG
    # FIX: enforce_encoding(s1=sample_input, s2=ne, positive=False)
