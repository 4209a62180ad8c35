"""convex_adversarial's evaluate_robust with the PGD line uncommented (locuslab/convex_adversarial#34):
the evaluation loop runs under `torch.no_grad()`, so the attack's `loss.backward()` raises
"element 0 of tensors does not require grad and does not have a grad_fn"."""
import torch
import torch.nn as nn
import torch.optim as optim
from torch.autograd import Variable


def _pgd(model, X, y, epsilon, niters=5, alpha=0.01):
    out = model(X)
    err = (out.data.max(1)[1] != y.data).float().sum() / X.size(0)
    X_pgd = Variable(X.data, requires_grad=True)
    for i in range(niters):
        opt = optim.Adam([X_pgd], lr=1e-3)
        opt.zero_grad()
        loss = nn.CrossEntropyLoss()(model(X_pgd), y)
        loss.backward()
        eta = alpha * X_pgd.grad.data.sign()
        X_pgd = Variable(X_pgd.data + eta, requires_grad=True)
        eta = torch.clamp(X_pgd.data - X.data, -epsilon, epsilon)
        X_pgd = Variable(X.data + eta, requires_grad=True)
    err_pgd = (model(X_pgd).data.max(1)[1] != y.data).float().sum() / X.size(0)
    return err, err_pgd


def evaluate_robust(loader, model, epsilon):
    model.eval()
    with torch.no_grad():
        for i, (X, y) in enumerate(loader):
            out = model(Variable(X))
            ce = nn.CrossEntropyLoss()(out, Variable(y))
            err = (out.max(1)[1] != y).float().sum() / X.size(0)
            _, pgd_err = _pgd(model, Variable(X), Variable(y), epsilon)  # <- no_grad
            print(f"batch {i}: ce {ce.item():.4f} err {err.item():.3f} pgd err {pgd_err.item():.3f}")


torch.manual_seed(0)
model = nn.Sequential(nn.Flatten(), nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 10))
opt = optim.SGD(model.parameters(), lr=0.1)
loader = [(torch.rand(8, 1, 4, 4), torch.randint(0, 10, (8,))) for _ in range(2)]
for X, y in loader:
    loss = nn.CrossEntropyLoss()(model(X), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
evaluate_robust(loader, model, epsilon=0.1)
