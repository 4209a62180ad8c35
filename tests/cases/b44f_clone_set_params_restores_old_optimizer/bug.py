# A classifier wrapper that can clone itself for refitting (shadow models for
# a membership-inference attack). The clone gets a deep copy of the model,
# re-initialised weights and a fresh optimizer, then inherits the other
# settings of the original wrapper through get_params()/set_params().
import copy

import torch
import torch.nn as nn

torch.manual_seed(0)


class TorchClassifier:
    def __init__(self, model, loss, optimizer):
        self.model = model
        self._loss = loss
        self._optimizer = optimizer
        self.nb_epochs = 1

    def get_params(self):
        return {"model": self.model, "loss": self._loss, "optimizer": self._optimizer,
                "nb_epochs": self.nb_epochs}

    def set_params(self, **kwargs):
        for key, value in kwargs.items():
            if key in ("loss", "optimizer"):
                key = "_" + key
            setattr(self, key, value)

    def reset(self):
        for m in self.model.modules():
            if hasattr(m, "reset_parameters"):
                m.reset_parameters()
        # a new optimizer bound to this model's parameters
        self._optimizer = type(self._optimizer)(self.model.parameters(), **self._optimizer.defaults)

    def clone_for_refitting(self):
        model = copy.deepcopy(self.model)
        clone = type(self)(model, self._loss, self._optimizer)
        clone.reset()
        params = self.get_params()
        del params["model"]
        clone.set_params(**params)  # <- optimizer
        return clone

    def fit(self, x, y, steps=20):
        self.model.train()
        for _ in range(steps):
            self._optimizer.zero_grad()
            loss = self._loss(self.model(x), y)
            loss.backward()
            self._optimizer.step()


net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
target = TorchClassifier(net, nn.CrossEntropyLoss(), torch.optim.SGD(net.parameters(), lr=0.1))

shadow = target.clone_for_refitting()
x, y = torch.randn(64, 8), torch.randint(0, 3, (64,))
shadow_before = copy.deepcopy(shadow.model.state_dict())
shadow.fit(x, y)

shadow_changed = any(not torch.equal(shadow_before[k], v) for k, v in shadow.model.state_dict().items())
print("shadow model weights changed by its fit:", shadow_changed)
