# jcjohnson/pytorch-examples: "Manually zero the gradients" (autograd/two_layer_net_autograd.py)
# https://github.com/jcjohnson/pytorch-examples/issues/14  (same bug: PR #4)
# What went wrong: the hand-written training loop zeroed w1.grad / w2.grad by hand at the top of
# each iteration, BEFORE loss.backward(). On the first iteration no backward has run yet, so
# w1.grad is None and `w1.grad.data.zero_()` raises
# AttributeError: 'NoneType' object has no attribute 'data'.
# Fix (commit 0d8adca): zero the gradients manually AFTER the backward pass and the weight update.
import torch

torch.manual_seed(0)
dtype = torch.float

# N is batch size; D_in is input dimension; H is hidden dimension; D_out is output dimension.
N, D_in, H, D_out = 16, 20, 8, 4

x = torch.randn(N, D_in, dtype=dtype)
y = torch.randn(N, D_out, dtype=dtype)

w1 = torch.randn(D_in, H, dtype=dtype, requires_grad=True)
w2 = torch.randn(H, D_out, dtype=dtype, requires_grad=True)

learning_rate = 1e-4
for t in range(50):
    y_pred = x.mm(w1).clamp(min=0).mm(w2)
    loss = (y_pred - y).pow(2).sum()
    if t % 10 == 0:
        print(t, loss.item())

    loss.backward()

    # Update weights using gradient descent
    w1.data -= learning_rate * w1.grad.data
    w2.data -= learning_rate * w2.grad.data

    # Manually zero the gradients after running the backward pass
    w1.grad.data.zero_()
    w2.grad.data.zero_()
