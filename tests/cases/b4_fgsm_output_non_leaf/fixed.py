"""The fixed twin: the attack returns xadv.detach(), a new leaf whose gradient can be read."""
import torch
from torch import nn
import torch.nn.functional as F


def fgsm_perturb(predict, x, y, eps, clip_min=0.0, clip_max=1.0):
    xadv = x.clone().requires_grad_()
    loss = F.cross_entropy(predict(xadv), y)
    grad = torch.autograd.grad(loss, xadv)[0]
    xadv = xadv + eps * grad.sign()
    xadv = torch.clamp(xadv, clip_min, clip_max)
    return xadv.detach()


torch.manual_seed(0)
model = nn.Sequential(nn.Linear(10, 16), nn.ReLU(), nn.Linear(16, 3))
x, y = torch.rand(8, 10), torch.randint(0, 3, (8,))
fgsm_tensor = fgsm_perturb(model, x, y, eps=0.1)
fgsm_tensor.requires_grad_()
loss = F.cross_entropy(model(fgsm_tensor), y)
loss.backward()
print("is_leaf:", fgsm_tensor.is_leaf)
saliency = fgsm_tensor.grad.clone()
print("saliency norm:", saliency.norm().item())
