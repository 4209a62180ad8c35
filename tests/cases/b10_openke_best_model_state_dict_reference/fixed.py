"""The fixed twin: the best state dict is deep-copied (thunlp/OpenKE#131)."""
import copy

import torch
import torch.nn.functional as F
from torch import nn


class TransE(nn.Module):
    def __init__(self, ent_tot=40, rel_tot=5, dim=16):
        super().__init__()
        self.ent_embeddings = nn.Embedding(ent_tot, dim)
        self.rel_embeddings = nn.Embedding(rel_tot, dim)

    def forward(self, h, r, t):
        return (self.ent_embeddings(h) + self.rel_embeddings(r) - self.ent_embeddings(t)).norm(p=1, dim=-1)


class Trainer:
    def __init__(self, model, train_triples, valid_triples, train_times=40, margin=1.0, lr=0.5):
        self.trainModel, self.train_triples, self.valid_triples = model, train_triples, valid_triples
        self.train_times, self.margin = train_times, margin
        self.optimizer = torch.optim.SGD(model.parameters(), lr=lr)

    def margin_loss(self, triples):
        h, r, t = triples.unbind(1)
        t_corrupt = (t + torch.randint(1, 40, t.shape)) % 40
        return F.relu(self.trainModel(h, r, t) - self.trainModel(h, r, t_corrupt) + self.margin).mean()

    def valid(self):
        torch.manual_seed(1)
        with torch.no_grad():
            return self.margin_loss(self.valid_triples).item()

    def run(self):
        best_loss, best_epoch, best_model = float("inf"), -1, None
        for epoch in range(self.train_times):
            torch.manual_seed(100 + epoch)
            loss = self.margin_loss(self.train_triples)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            valid_loss = self.valid()
            if valid_loss < best_loss:
                best_loss, best_epoch = valid_loss, epoch
                best_model = copy.deepcopy(self.trainModel.state_dict())
        self.trainModel.load_state_dict(best_model)
        print(f"best epoch {best_epoch} with valid loss {best_loss:.4f}; "
              f"valid loss of the restored model {self.valid():.4f}")


torch.manual_seed(0)
train_triples = torch.stack([torch.randint(0, 40, (16,)), torch.randint(0, 5, (16,)), torch.randint(0, 40, (16,))], 1)
valid_triples = torch.stack([torch.randint(0, 40, (64,)), torch.randint(0, 5, (64,)), torch.randint(0, 40, (64,))], 1)
Trainer(TransE(), train_triples, valid_triples).run()
