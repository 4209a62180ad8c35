"""Evaluating robustness with an iterative attack inside the test loop's `with torch.no_grad():`
(BorealisAI/advertorch#79): the attack's loss has no graph and its backward raises "element 0 of
tensors does not require grad and does not have a grad_fn"."""
import torch
from torch import nn
import torch.nn.functional as F


def perturb_iterative(predict, xvar, yvar, nb_iter, eps, eps_iter):
    delta = torch.zeros_like(xvar)
    delta.requires_grad_()
    for ii in range(nb_iter):
        outputs = predict(xvar + delta)
        loss = F.cross_entropy(outputs, yvar)
        loss.backward()
        grad_sign = delta.grad.data.sign()
        delta.data = delta.data + eps_iter * grad_sign
        delta.data = torch.clamp(delta.data, -eps, eps)
        delta.grad.data.zero_()
    return (xvar + delta).detach()


torch.manual_seed(0)
net = nn.Sequential(nn.Linear(10, 16), nn.ReLU(), nn.Linear(16, 3))
net.eval()
testloader = [(torch.randn(8, 10), torch.randint(0, 3, (8,))) for _ in range(2)]
correct = 0
with torch.no_grad():
    for batch_idx, (inputs, targets) in enumerate(testloader):
        adv_untargeted = perturb_iterative(net, inputs, targets, 3, 0.3, 0.1)  # <- no_grad
        outputs = net(adv_untargeted)
        correct += (outputs.argmax(1) == targets).sum().item()
print("adversarial accuracy:", correct / 16)
