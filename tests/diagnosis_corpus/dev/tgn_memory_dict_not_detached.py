"""A temporal graph network (TGN): every node has a memory vector, kept in a dict keyed by node,
updated by a GRU cell from the messages of each batch of interaction events; the embeddings of
the memories predict the next links.

Rewritten from memgraph/mage#121 ("Temporal graph networks implementation", merged): its
`Memory` keeps `memory_container: Dict[int, torch.Tensor]` and has a `detach_tensor_grads()` that
detaches every node's memory after the batch's backward, with a comment pointing to the Stack
Overflow question on "Trying to backward through the graph a second time"; the reviewer asked to
loop over `values`, not `items`. Without it, the next batch's update starts from memories that
carry the freed graph of the last one.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "memgraph/mage#121"
CATEGORY = "carried-state"
CULPRIT = "memory.memory_container"
CAUSE = "node memories in a dict carry the previous batch's freed graph"
FIX_KIND = "detach-carried"
ERROR = "second time"
INTENT = ("Each batch's link-prediction loss trains the memory updater and the embedding through "
          "this batch's memory updates only; earlier memories are starting values.")
GRADS = ["updater.parameters()", "embed.parameters()"]


class Memory:
    def __init__(self, num_nodes, dim):
        self.memory_container = {n: torch.zeros(dim) for n in range(num_nodes)}

    def detach_tensor_grads(self):
        for node, mem in self.memory_container.items():
            self.memory_container[node] = mem.detach()


torch.manual_seed(0)
dim, memory = 6, Memory(5, 6)
updater, embed = nn.GRUCell(2 * dim + 2, dim), nn.Linear(dim, dim)
optimizer = torch.optim.Adam([*updater.parameters(), *embed.parameters()], lr=1e-3)
events = torch.tensor([[0, 1], [1, 2], [3, 4], [2, 0], [4, 1], [0, 3]])
for batch in events.split(2):
    for src, dst in batch.tolist():
        msg = torch.cat([memory.memory_container[src], memory.memory_container[dst], torch.randn(2)])
        memory.memory_container[src] = updater(msg[None], memory.memory_container[src][None])[0]
    z = embed(torch.stack(list(memory.memory_container.values())))
    pos, neg = (z[batch[:, 0]] * z[batch[:, 1]]).sum(1), (z[batch[:, 0]] * z[torch.randint(0, 5, (2,))]).sum(1)
    loss = F.binary_cross_entropy_with_logits(torch.cat([pos, neg]), torch.cat([torch.ones(2), torch.zeros(2)]))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()  # BUG
    # FIX: optimizer.step(); memory.detach_tensor_grads()
