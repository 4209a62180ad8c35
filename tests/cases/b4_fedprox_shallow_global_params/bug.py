"""FL-bench's FedProx client (KarhouTam/FL-bench#165): `global_params = list(self.model.parameters())`
keeps references to the live weights, not a copy of the global model, so the proximal gradient
mu * (w - w_t) is always zero and FedProx degenerates to FedAvg."""
import torch
from torch import nn


class FedProxClient:
    def __init__(self, model, mu=0.5):
        self.model = model
        self.mu = mu
        self.optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        self.criterion = nn.CrossEntropyLoss()

    def fit(self, trainloader, local_epoch=2):
        self.model.train()
        global_params = list(self.model.parameters())  # <- state_dict_alias
        for _ in range(local_epoch):
            for x, y in trainloader:
                logit = self.model(x)
                loss = self.criterion(logit, y)
                self.optimizer.zero_grad()
                loss.backward()
                for w, w_t in zip(self.model.parameters(), global_params):
                    if w.requires_grad:
                        w.grad.data += self.mu * (w.data - w_t.data)
                self.optimizer.step()
        drift = sum((w - w_t).norm() for w, w_t in zip(self.model.parameters(), global_params))
        print(f"loss {loss.item():.4f} proximal distance seen by the client {drift.item():.4f}")


torch.manual_seed(0)
global_model = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3))
client = FedProxClient(global_model)
trainloader = [(torch.randn(8, 6), torch.randint(0, 3, (8,))) for _ in range(3)]
client.fit(trainloader)
