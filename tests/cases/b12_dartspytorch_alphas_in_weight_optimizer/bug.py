"""DARTS search in dragen1860/DARTS-PyTorch (issue #5): the architecture weights are registered with
`self.alpha_normal = nn.Parameter(...)`, so `model.parameters()` hands them to the weight optimizer as well as to
the architect's Adam: "your optimizer will update the alpha and beta when optimize the weight of operations",
unlike the paper, where the alphas move only on the validation loss (the fix: filter the alphas out of the
weight optimizer's list)."""
import torch
import torch.nn.functional as F
from torch import nn

OPS = [lambda c: nn.Conv2d(c, c, 3, padding=1), lambda c: nn.Conv2d(c, c, 1), lambda c: nn.Identity()]


class Network(nn.Module):
    def __init__(self, c=8, k=2, num_classes=4):
        super().__init__()
        self.stem = nn.Conv2d(3, c, 3, padding=1)
        self.edges = nn.ModuleList(nn.ModuleList(op(c) for op in OPS) for _ in range(k))
        self.classifier = nn.Linear(c, num_classes)
        self.alpha_normal = nn.Parameter(1e-3 * torch.randn(k, len(OPS)))

    def arch_parameters(self):
        return [self.alpha_normal]

    def forward(self, x):
        h = self.stem(x)
        for ops, w in zip(self.edges, F.softmax(self.alpha_normal, dim=-1)):
            h = sum(wi * op(h) for wi, op in zip(w, ops))
        return self.classifier(h.mean((2, 3)))


torch.manual_seed(0)
model = Network()
optimizer = torch.optim.SGD(model.parameters(), 0.025, momentum=0.9, weight_decay=3e-4)  # <- optimizer
arch_optimizer = torch.optim.Adam(model.arch_parameters(), lr=3e-4, betas=(0.5, 0.999), weight_decay=1e-3)
alpha0, w0 = model.alpha_normal.detach().clone(), model.classifier.weight.detach().clone()
x_train, y_train = torch.rand(8, 3, 8, 8), torch.randint(0, 4, (8,))
x_valid, y_valid = torch.rand(8, 3, 8, 8), torch.randint(0, 4, (8,))
for step in range(3):
    arch_optimizer.zero_grad()
    F.cross_entropy(model(x_valid), y_valid).backward()
    arch_optimizer.step()
    alpha_before = model.alpha_normal.detach().clone()
    optimizer.zero_grad()
    F.cross_entropy(model(x_train), y_train).backward()
    optimizer.step()
    moved = (model.alpha_normal - alpha_before).abs().max().item()
    print(f"step {step}: alphas moved by the weight step: {moved:.2e}")
print(f"alphas learned: {not torch.equal(model.alpha_normal, alpha0)}; weights learned: "
      f"{not torch.equal(model.classifier.weight, w0)}")
