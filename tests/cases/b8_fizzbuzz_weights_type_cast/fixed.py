"""The fixed twin of fizzbuzz_weights_type_cast (https://github.com/hhsecond/HandsOnDeepLearningWithPytorch/issues/2)."""
import torch

torch.manual_seed(0)
dtype = torch.DoubleTensor
x = torch.randn(32, 10).type(dtype)
y = torch.randn(32, 4).type(dtype)
w1 = torch.randn(10, 16).type(dtype).requires_grad_()
w2 = torch.randn(16, 4, dtype=torch.float64, requires_grad=True)
lr = 1e-3
for epoch in range(5):
    out = (x @ w1).sigmoid() @ w2
    loss = (out - y).pow(2).sum()
    loss.backward()
    with torch.no_grad():
        w1 -= lr * w1.grad
        w2 -= lr * w2.grad
        w1.grad.zero_()
        w2.grad.zero_()
    print(f"epoch {epoch}: loss {loss.item():.3f}")
