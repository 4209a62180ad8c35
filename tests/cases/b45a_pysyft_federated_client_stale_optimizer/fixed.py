"""The fixed twin (OpenMined/PySyft PR #2268): set_obj resets the cached optimizer when a new TrainConfig
arrives, so fit() builds a fresh optimizer over the parameters of the model the new config points to."""
import copy

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


class TrainConfig:
    def __init__(self, model_id, loss_fn_id, batch_size=16, epochs=1, optimizer="SGD", optimizer_args=None):
        self._model_id, self._loss_fn_id = model_id, loss_fn_id
        self.batch_size, self.epochs = batch_size, epochs
        self.optimizer, self.optimizer_args = optimizer, optimizer_args or {"lr": 0.1}


class FederatedClient:
    """A client able to execute federated learning on its local dataset (stand-in for syft's worker)."""

    def __init__(self, dataset):
        self._objects = {}
        self.dataset = dataset
        self.optimizer = None
        self.train_config = None

    def set_obj(self, obj_id, obj):
        if isinstance(obj, TrainConfig):
            self.train_config = obj
            self.optimizer = None
        else:
            self._objects[obj_id] = obj

    def _build_optimizer(self, optimizer_name, model, optimizer_args):
        if self.optimizer is not None:
            return self.optimizer
        self.optimizer = getattr(torch.optim, optimizer_name)(model.parameters(), **optimizer_args)
        return self.optimizer

    def fit(self):
        model = self._objects[self.train_config._model_id]
        loss_fn = self._objects[self.train_config._loss_fn_id]
        self._build_optimizer(self.train_config.optimizer, model, self.train_config.optimizer_args)
        return self._fit(model, loss_fn)

    def _fit(self, model, loss_fn):
        x, y = self.dataset
        for _ in range(self.train_config.epochs):
            for i in range(0, len(x), self.train_config.batch_size):
                self.optimizer.zero_grad()
                output = model(x[i:i + self.train_config.batch_size])
                loss = loss_fn(target=y[i:i + self.train_config.batch_size], pred=output)
                loss.backward()
                self.optimizer.step()
        return loss


def loss_fn(pred, target):
    return F.cross_entropy(pred, target)


w_true = torch.randn(10, 3)
workers = []
for _ in range(2):
    x = torch.randn(64, 10)
    workers.append(FederatedClient((x, (x @ w_true).argmax(1))))

global_model = nn.Linear(10, 3)
for rnd in range(4):
    local_models = []
    for k, worker in enumerate(workers):
        model_id, loss_id = f"model_r{rnd}", f"loss_r{rnd}"
        worker.set_obj(model_id, copy.deepcopy(global_model))  # the server sends the current model
        worker.set_obj(loss_id, loss_fn)
        worker.set_obj("config", TrainConfig(model_id, loss_id))
        sent = global_model.weight.detach().clone()
        loss = worker.fit()
        trained = worker._objects[model_id]
        changed = not torch.equal(sent, trained.weight.detach())
        print(f"round {rnd} worker {k}: loss {loss.item():.4f}, grad arrived: {trained.weight.grad is not None}, model changed by fit: {changed}")
        local_models.append(trained)
    with torch.no_grad():  # federated averaging on the server
        for p, *ps in zip(global_model.parameters(), *(m.parameters() for m in local_models)):
            p.copy_(torch.stack(ps).mean(0))
