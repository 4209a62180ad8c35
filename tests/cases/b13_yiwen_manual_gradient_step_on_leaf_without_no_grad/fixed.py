"""hao-yiwen.github.io, "PyTorch common errors and pitfalls" (docs/ai/frameworks/pytorch/common-errors): a hand-written
gradient-descent loop updates the weights with `w -= lr * w.grad` outside `torch.no_grad()`; w and b are leaves that
require grad, so the in-place update raises "a leaf Variable that requires grad is being used in an in-place
operation". The post's fix: wrap the update in `with torch.no_grad():` (keeping the in-place `-=`)."""
import torch

torch.manual_seed(0)
x = torch.randn(64, 3)
y = x @ torch.tensor([[2.0], [-1.0], [0.5]]) + 0.3
w = torch.randn(3, 1, requires_grad=True)
b = torch.zeros(1, requires_grad=True)
lr = 0.1

for epoch in range(3):
    pred = x @ w + b
    loss = ((pred - y) ** 2).mean()
    loss.backward()
    with torch.no_grad():
        w -= lr * w.grad
        b -= lr * b.grad
    w.grad.zero_()
    b.grad.zero_()
    print(f"epoch {epoch}: loss {loss.item():.4f}")
w0, b0 = w.detach().clone(), b.detach().clone()
((x @ w + b - y) ** 2).mean().backward()
assert w.grad is not None and b.grad is not None
with torch.no_grad():
    w -= lr * w.grad
    b -= lr * b.grad
assert not torch.equal(w, w0) and not torch.equal(b, b0)
print("w and b got gradients and changed")
