"""fastbook chapter 4, 04_mnist_basics (fastai/fastbook#471): the from-scratch linear model's
weights come from init_params(...).requires_grad_(), and the notebook nudges one of them with
`weights[0] *= 1.0001` to show that accuracy does not move. With grad mode on, that in-place write
on a view of a leaf that requires grad raises "a view of a leaf Variable that requires grad is
being used in an in-place operation", and the chapter's hand-written SGD never runs."""
import torch

torch.manual_seed(0)

# stand-ins for the stacked, flattened 3s and 7s (28*28 pixels each), label 1 for a 3
train_x = torch.rand(64, 28 * 28)
train_y = torch.cat([torch.ones(32), torch.zeros(32)]).unsqueeze(1)


def init_params(size, std=1.0):
    return (torch.randn(size) * std).requires_grad_()


weights = init_params((28 * 28, 1))
bias = init_params(1)


def linear1(xb):
    return xb @ weights + bias


preds = linear1(train_x)
corrects = (preds > 0.0).float() == train_y
print("accuracy:", corrects.float().mean().item())

weights[0] *= 1.0001  # <- autograd_error
preds = linear1(train_x)
print("accuracy after nudge:", ((preds > 0.0).float() == train_y).float().mean().item())


def mnist_loss(predictions, targets):
    predictions = predictions.sigmoid()
    return torch.where(targets == 1, 1 - predictions, predictions).mean()


def calc_grad(xb, yb, model):
    preds = model(xb)
    loss = mnist_loss(preds, yb)
    loss.backward()


def train_epoch(model, lr, params):
    for xb, yb in zip(train_x.split(16), train_y.split(16)):
        calc_grad(xb, yb, model)
        for p in params:
            p.data -= p.grad * lr
            p.grad.zero_()


w_before = weights.detach().clone()
for epoch in range(3):
    train_epoch(linear1, 1.0, (weights, bias))
print("weights changed:", not torch.equal(w_before, weights.detach()))
