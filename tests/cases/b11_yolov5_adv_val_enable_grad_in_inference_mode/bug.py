"""Adversarial testing in YOLOv5's classify/val.py (ultralytics/yolov5#12808): the user wraps the PGD attack in
`with torch.enable_grad():` inside run(), which val.py decorates with @smart_inference_mode(), i.e.
torch.inference_mode(); enable_grad does not leave inference mode, so the attack's loss has no graph and its
backward raises "element 0 of tensors does not require grad and does not have a grad_fn" (the fix: run the
validation under torch.no_grad(), which enable_grad can lift)."""
import torch
import torch.nn.functional as F
from torch import nn


def smart_inference_mode():
    return torch.inference_mode()


class LinfPGDAttack:
    def __init__(self, model, eps=8 / 255, eps_iter=2 / 255, nb_iter=3):
        self.model, self.eps, self.eps_iter, self.nb_iter = model, eps, eps_iter, nb_iter

    def perturb(self, x, y):
        delta = torch.empty_like(x).uniform_(-self.eps, self.eps)
        for _ in range(self.nb_iter):
            delta.requires_grad_(True)
            loss = F.cross_entropy(self.model(x + delta), y)
            grad, = torch.autograd.grad(loss, delta)
            delta = (delta.detach() + self.eps_iter * grad.sign()).clamp(-self.eps, self.eps)
        return (x + delta).clamp(0, 1)


@smart_inference_mode()  # <- no_grad
def run(model, dataloader):
    model.eval()
    attacker = LinfPGDAttack(model)
    correct = total = 0
    for images, labels in dataloader:
        with torch.enable_grad():
            img_adv = attacker.perturb(images, labels)
        correct += (model(img_adv).argmax(1) == labels).sum().item()
        total += labels.numel()
    return correct / total


torch.manual_seed(0)
model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 5))
dataloader = [(torch.rand(8, 3, 32, 32), torch.randint(0, 5, (8,))) for _ in range(2)]
print(f"adversarial top-1: {run(model, dataloader):.3f}")
