"""DeepCTR-Torch's BaseModel (shenweichen/DeepCTR-Torch#90, DeepFM on criteo): the L2 penalty on the embeddings is
built once, in `__init__` (`add_regularization_loss(self.embedding_dict.parameters(), ...)`), and `fit` adds that
same tensor to every batch's loss with `total_loss.backward(retain_graph=True)`; after the first `optim.step()`
changed the embedding weights in place, the next backward fails with "one of the variables needed for gradient
computation has been modified by an inplace operation: ... is at version 2; expected version 1". The fix posted in
the thread computes the penalty inside `fit`, from the current weights, at every step."""
import torch
import torch.nn.functional as F
from torch import nn


class DeepFM(nn.Module):
    def __init__(self, field_dims, emb=4, l2_reg_embedding=1e-5):
        super().__init__()
        self.embedding_dict = nn.ModuleDict({f: nn.Embedding(n, emb) for f, n in field_dims.items()})
        self.dnn = nn.Sequential(nn.Linear(len(field_dims) * emb, 16), nn.ReLU(), nn.Linear(16, 1))
        self.l2_reg_embedding = l2_reg_embedding
        self.reg_loss = self.regularization_loss(self.embedding_dict.parameters(), l2_reg_embedding)

    def regularization_loss(self, weight_list, weight_decay):
        return sum(torch.sum(weight_decay * torch.square(w)) for w in weight_list)

    def forward(self, x):
        embs = [self.embedding_dict[f](x[:, i]) for i, f in enumerate(self.embedding_dict)]
        fm = 0.5 * (sum(embs).pow(2) - sum(e.pow(2) for e in embs)).sum(1, keepdim=True)
        return torch.sigmoid(fm + self.dnn(torch.cat(embs, 1))).squeeze(1)

    def fit(self, x, y, batch_size=32, epochs=1):
        optim = torch.optim.Adagrad(self.parameters(), lr=0.01)
        for epoch in range(epochs):
            for start in range(0, len(x), batch_size):
                y_pred = self(x[start:start + batch_size])
                optim.zero_grad()
                loss = F.binary_cross_entropy(y_pred, y[start:start + batch_size], reduction='sum')
                total_loss = loss + self.reg_loss
                total_loss.backward(retain_graph=True)
                optim.step()  # <- inplace_saved
            print(f"epoch {epoch}: loss {total_loss.item():.4f}")


torch.manual_seed(0)
model = DeepFM({'C1': 30, 'C2': 20, 'C3': 10})
x = torch.stack([torch.randint(0, n, (96,)) for n in (30, 20, 10)], 1)
y = torch.randint(0, 2, (96,)).float()
model.fit(x, y)
