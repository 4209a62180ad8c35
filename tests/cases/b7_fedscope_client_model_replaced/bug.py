"""Continuing federated training from a pretrained model (alibaba/FederatedScope#477): the user assigns
copy.deepcopy(pretrained_model) to each client's .model after the runner was built, but each client's trainer
keeps (and its optimizer updates) the model it was built with; the model the clients evaluate never changes, so
the accuracy only fluctuates."""
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
    client.model = copy.deepcopy(pretrained_model)  # <- optimizer
for rnd in range(5):
    for client in clients:
        client.trainer.train(client.x, client.y)
    print(f"round {rnd}: accuracy {sum(c.evaluate() for c in clients) / len(clients):.3f}")
