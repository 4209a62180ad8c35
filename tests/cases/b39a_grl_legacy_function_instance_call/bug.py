# Domain-adversarial training (DANN style) with an old-style gradient reversal
# Function: the Function is instantiated with lambd and called like a module.
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.autograd import Function

torch.manual_seed(0)


class GradReverse(Function):
    def __init__(self, lambd):
        self.lambd = lambd

    def forward(self, x):
        return x.view_as(x)

    def backward(self, grad_output):
        return -self.lambd * grad_output


def grad_reverse(x, lambd=1.0):
    return GradReverse(lambd)(x)  # <- autograd_error


class Feature(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(20, 32)
        self.fc2 = nn.Linear(32, 16)

    def forward(self, x):
        return F.relu(self.fc2(F.relu(self.fc1(x))))


class Predictor(nn.Module):
    def __init__(self, n_out):
        super().__init__()
        self.fc = nn.Linear(16, n_out)

    def forward(self, x, reverse=False, lambd=1.0):
        if reverse:
            x = grad_reverse(x, lambd)
        return self.fc(x)


G = Feature()
C = Predictor(4)      # label classifier
D = Predictor(2)      # domain classifier, trained through the reversal layer
opt = torch.optim.SGD(list(G.parameters()) + list(C.parameters()) + list(D.parameters()), lr=0.01)

xs, ys = torch.randn(16, 20), torch.randint(0, 4, (16,))
xt = torch.randn(16, 20) + 0.5

for step in range(3):
    opt.zero_grad()
    fs, ft = G(xs), G(xt)
    loss_cls = F.cross_entropy(C(fs), ys)
    dom_logits = D(torch.cat([fs, ft]), reverse=True, lambd=0.1)
    dom_labels = torch.cat([torch.zeros(16), torch.ones(16)]).long()
    loss_dom = F.cross_entropy(dom_logits, dom_labels)
    loss = loss_cls + loss_dom
    loss.backward()
    opt.step()
    print(step, loss.item())
