"""PyTorch Forums, "How to learn the weights between two losses?" (uncertainty weighting, Kendall et al.),
https://discuss.pytorch.org/t/how-to-learn-the-weights-between-two-losses/39681: the accepted answer's
MultiTaskLoss learns the loss weights sigma, but the task networks f1 and f2 never learn: their weights stay
at their initial values and their .grad stays None (only sigma changes).
Why: forward() puts the per-task losses into a new tensor with torch.Tensor(l); that copies their values and
drops their autograd history, so the weighted loss reaches sigma but not f1/f2.
Fix: keep the losses in the graph with torch.stack(l)."""
import torch
import torch.nn as nn
import torch.optim as optim


class MultiTaskLoss(nn.Module):
    def __init__(self, tasks):
        super(MultiTaskLoss, self).__init__()
        self.tasks = nn.ModuleList(tasks)
        self.sigma = nn.Parameter(torch.ones(len(tasks)))
        self.mse = nn.MSELoss()

    def forward(self, x, targets):
        l = [self.mse(f(x), y) for y, f in zip(targets, self.tasks)]
        l = 0.5 * torch.stack(l) / self.sigma**2
        l = l.sum() + torch.log(self.sigma.prod())
        return l


torch.manual_seed(0)
f1 = nn.Linear(5, 1, bias=False)
f2 = nn.Linear(5, 1, bias=False)

x = torch.randn(3, 5)
y1 = torch.randn(3, 1)
y2 = torch.randn(3, 1)

mtl = MultiTaskLoss([f1, f2])
before = f1.weight.detach().clone()

optimizer = optim.SGD(mtl.parameters(), lr=0.1)
for step in range(5):
    optimizer.zero_grad()
    loss = mtl(x, [y1, y2])
    loss.backward()
    optimizer.step()
    print(f"step {step} loss={loss.item():.4f} sigma={mtl.sigma.data.tolist()}")

print("f1.weight.grad:", f1.weight.grad)
print("f1 weights changed:", not torch.equal(before, f1.weight))
