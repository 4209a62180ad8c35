"""dalinvip/pytorch_word2vec, issue #2 "np.sum breaks gradient transfering".
https://github.com/dalinvip/pytorch_word2vec/issues/2

What the user saw: in the CBOW model, u_embeddings never updates; only v_embeddings learns.
Why: CBOW.forward sums the context embeddings with
`np.sum(emb_ui.data.numpy(), axis=0).tolist()` and rewraps the list with
`torch.FloatTensor(emb_u)`: .data/.numpy()/.tolist() leave the graph, so the
score reaches v_embeddings only and u_embeddings.weight.grad stays None.
Fix: keep the sum in torch: `emb_u.append(emb_ui.sum(dim=0))` and `torch.stack(emb_u)`.
"""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class CBOW(nn.Module):
    def __init__(self, emb_size, emb_dimension):
        super().__init__()
        self.u_embeddings = nn.Embedding(2 * emb_size - 1, emb_dimension)
        self.v_embeddings = nn.Embedding(2 * emb_size - 1, emb_dimension)
        initrange = 0.5 / emb_dimension
        self.u_embeddings.weight.data.uniform_(-initrange, initrange)
        self.v_embeddings.weight.data.uniform_(-initrange, initrange)

    def forward(self, pos_u, pos_v):
        emb_u = []
        for i in range(len(pos_u)):
            emb_ui = self.u_embeddings(torch.LongTensor(pos_u[i]))
            emb_u.append(emb_ui.sum(dim=0))
        emb_u = torch.stack(emb_u)
        emb_v = self.v_embeddings(torch.LongTensor(pos_v))
        score = torch.sum(torch.mul(emb_u, emb_v), dim=1)
        score = F.logsigmoid(score)
        return -1 * score.sum()


torch.manual_seed(0)
model = CBOW(emb_size=10, emb_dimension=8)
optimizer = torch.optim.SGD(model.parameters(), lr=0.2)
pos_u = [[1, 2, 4, 5], [2, 3, 5, 6], [0, 1, 3, 4]]
pos_v = [3, 4, 2]
u_before = model.u_embeddings.weight.detach().clone()
for step in range(5):
    optimizer.zero_grad()
    loss = model(pos_u, pos_v)
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.4f}")
print("u_embeddings.weight.grad:", model.u_embeddings.weight.grad)
print("u_embeddings changed:", not torch.equal(u_before, model.u_embeddings.weight.detach()))
