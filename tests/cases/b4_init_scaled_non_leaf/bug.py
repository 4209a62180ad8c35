"""The nn_tutorial's logistic regression from scratch with requires_grad set before the Xavier scaling
(pytorch/tutorials#3717): `weights` is the result of a division, not a leaf, so loss.backward() leaves
weights.grad None and the manual update fails."""
import math
import torch
import torch.nn.functional as F

torch.manual_seed(0)
x_train, y_train = torch.randn(64, 20), torch.randint(0, 3, (64,))
weights = torch.randn(20, 3, requires_grad=True) / math.sqrt(20)  # <- non_leaf_watched
bias = torch.zeros(3, requires_grad=True)
lr, bs = 0.5, 16


def model(xb):
    return F.log_softmax(xb @ weights + bias, dim=-1)


for epoch in range(2):
    for i in range(64 // bs):
        xb, yb = x_train[i * bs:(i + 1) * bs], y_train[i * bs:(i + 1) * bs]
        loss = F.nll_loss(model(xb), yb)
        loss.backward()
        with torch.no_grad():
            weights -= weights.grad * lr
            bias -= bias.grad * lr
            weights.grad.zero_()
            bias.grad.zero_()
    print(f"epoch {epoch}: loss {loss.item():.4f}")
