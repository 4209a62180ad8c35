"""RA-CNN's pairwise ranking loss (dillondavis/RecurrentAttentionConvolutionalNeuralNetwork#4): the loss
keeps one value per sample, which worked with batch size 1; with a batch of 32 backward() raises "grad
can be implicitly created only for scalar outputs"."""
import torch
from torch import nn
import torch.nn.functional as F


def criterion_rank(scores1, scores2, target, margin=0.05):
    ps1 = F.softmax(scores1, dim=1).gather(1, target.long().view(-1, 1))
    ps2 = F.softmax(scores2, dim=1).gather(1, target.long().view(-1, 1))
    return (ps1 - ps2 + margin).clamp(min=0)  # <- autograd_error


torch.manual_seed(0)
scales = nn.ModuleList(nn.Linear(12, 5) for _ in range(3))
optimizer = torch.optim.SGD(scales.parameters(), lr=0.01)
batch, label = torch.randn(32, 12), torch.randint(0, 5, (32,))
scores = [scale(batch) for scale in scales]
optimizer.zero_grad()
for i in range(1, len(scores)):
    retain_graph = i < len(scores) - 1
    criterion_rank(scores[i - 1], scores[i], label).backward(retain_graph=retain_graph)
optimizer.step()
print("rank loss stepped", [round(s.weight.grad.norm().item(), 4) for s in scales])
