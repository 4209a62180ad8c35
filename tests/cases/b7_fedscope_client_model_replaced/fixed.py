"""The fixed twin: the pretrained weights are loaded into the clients' own models with load_state_dict, the
objects their trainers update (alibaba/FederatedScope#477)."""
import copy

import torch
import torch.nn.functional as F
from torch import nn


class Trainer:
    def __init__(self, model, lr=0.1):
        self.ctx_model = model
        self.optimizer = torch.optim.SGD(model.parameters(), lr=lr)

    def train(self, x, y):
        loss = F.cross_entropy(self.ctx_model(x), y)
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()


class Client:
    def __init__(self, model, x, y):
        self.model = model
        self.trainer = Trainer(model)
        self.x, self.y = x, y

    def evaluate(self):
        with torch.no_grad():
            return (self.model(self.x).argmax(1) == self.y).float().mean().item()


torch.manual_seed(0)
w_true = torch.randn(8, 3)
data = [(x, (x @ w_true).argmax(1)) for x in (torch.randn(64, 8) for _ in range(3))]
clients = [Client(nn.Linear(8, 3), x, y) for x, y in data]
pretrained_model = nn.Linear(8, 3)
for client in clients:
    client.model.load_state_dict(copy.deepcopy(pretrained_model.state_dict()))
for rnd in range(5):
    for client in clients:
        client.trainer.train(client.x, client.y)
    print(f"round {rnd}: accuracy {sum(c.evaluate() for c in clients) / len(clients):.3f}")
