"""The fixed twin: the attack runs with gradients enabled, only the evaluation under no_grad
(Trusted-AI/adversarial-robustness-toolbox#498)."""
import torch
import torch.nn.functional as F
from torch import nn


class PyTorchClassifier:
    def __init__(self, model):
        self.model = model

    def loss_gradient(self, x, y):
        x_grad = x.clone().requires_grad_(True)
        loss = F.cross_entropy(self.model(x_grad), y)
        loss.backward()
        return x_grad.grad


class ProjectedGradientDescent:
    def __init__(self, estimator, eps=0.3, eps_step=0.1, max_iter=3):
        self.estimator, self.eps, self.eps_step, self.max_iter = estimator, eps, eps_step, max_iter

    def generate(self, x, y):
        x_adv = x.clone()
        for _ in range(self.max_iter):
            grad = self.estimator.loss_gradient(x_adv, y)
            x_adv = (x + (x_adv + self.eps_step * grad.sign() - x).clamp(-self.eps, self.eps)).clamp(0, 1)
        return x_adv


torch.manual_seed(0)
model = nn.Sequential(nn.Flatten(), nn.Linear(28 * 28, 32), nn.ReLU(), nn.Linear(32, 10)).eval()
classifier = PyTorchClassifier(model)
attack = ProjectedGradientDescent(estimator=classifier)
x_test, y_test = torch.rand(16, 1, 28, 28), torch.randint(0, 10, (16,))
x_test_adv = attack.generate(x=x_test, y=y_test)
with torch.no_grad():
    accuracy = (model(x_test_adv).argmax(1) == y_test).float().mean()
print(f"accuracy on adversarial examples: {accuracy.item():.3f}")
