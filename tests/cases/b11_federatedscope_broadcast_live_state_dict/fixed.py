"""The fixed twin: the server broadcasts a deep copy of its weights (alibaba/FederatedScope#664)."""
import copy

import torch
import torch.nn.functional as F
from torch import nn


class Server:
    def __init__(self, model):
        self.model = model

    def broadcast_model_para(self):
        return copy.deepcopy(self.model.state_dict())

    def aggregate(self, client_paras):
        avg = {k: sum(p[k] for p in client_paras) / len(client_paras) for k in client_paras[0]}
        self.model.load_state_dict(avg)


class Client:
    def __init__(self, model, data):
        self.model, self.data = model, data

    def train(self, model_para):
        self.model.load_state_dict(model_para)
        start = copy.deepcopy(self.model.state_dict())
        optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)
        for x, y in self.data:
            loss = F.mse_loss(self.model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        return start, copy.deepcopy(self.model.state_dict())


torch.manual_seed(0)
shared_model = nn.Linear(4, 1)
server = Server(shared_model)
clients = [Client(shared_model, [(torch.randn(8, 4), torch.randn(8, 1)) for _ in range(3)]) for _ in range(3)]
for rnd in range(2):
    model_para = server.broadcast_model_para()
    global_weight = shared_model.weight.detach().clone()
    results = [client.train(model_para) for client in clients]
    starts_at_global = [torch.equal(start['weight'], global_weight) for start, _ in results]
    print(f"round {rnd}: clients start from the broadcast weights: {starts_at_global}")
    server.aggregate([para for _, para in results])
