"""Shadow models for a membership-inference attack (Trusted-AI/adversarial-robustness-toolbox#1579): the
classifier from clone_for_refitting() gets a deep copy of the model but the original optimizer, which is bound to
the original model's parameters; the shadow model's weights get gradients in fit() but are never updated."""
import copy

import torch
import torch.nn.functional as F
from torch import nn


class PyTorchClassifier:
    def __init__(self, model, loss, optimizer, nb_classes):
        self._model, self._loss, self._optimizer, self.nb_classes = model, loss, optimizer, nb_classes

    @property
    def model(self):
        return self._model

    def fit(self, x, y, nb_epochs=3):
        for _ in range(nb_epochs):
            self._optimizer.zero_grad()
            loss = self._loss(self._model(x), y)
            loss.backward()
            self._optimizer.step()
        return loss.item()

    def reset(self):
        for module in self._model.modules():
            if hasattr(module, "reset_parameters"):
                module.reset_parameters()

    def clone_for_refitting(self):
        model = copy.deepcopy(self._model)
        clone = type(self)(model=model, loss=self._loss, optimizer=self._optimizer, nb_classes=self.nb_classes)  # <- optimizer
        clone.reset()
        return clone


torch.manual_seed(0)
model = nn.Sequential(nn.Linear(10, 16), nn.ReLU(), nn.Linear(16, 3))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
art_classifier = PyTorchClassifier(model=model, loss=F.cross_entropy, optimizer=optimizer, nb_classes=3)
x_target, y_target = torch.randn(24, 10), torch.randint(0, 3, (24,))
art_classifier.fit(x_target, y_target)
shadow_x, shadow_y = torch.randn(24, 10), torch.randint(0, 3, (24,))
shadow_models = [art_classifier.clone_for_refitting() for _ in range(2)]
for i, shadow in enumerate(shadow_models):
    before = shadow.model[0].weight.detach().clone()
    loss = shadow.fit(shadow_x, shadow_y)
    print(f"shadow model {i}: loss {loss:.4f}, weights changed:", not torch.equal(before, shadow.model[0].weight))
