import torch

torch.manual_seed(0)
fast_weights = [torch.randn(4, 4, requires_grad=True), torch.zeros(4, requires_grad=True)]
x, y = torch.randn(8, 4), torch.randn(8, 4)
for _ in range(2):
    w0 = fast_weights[0]
    loss = ((x @ w0 + fast_weights[1] - y) ** 2).mean()
    loss.backward()
print(fast_weights[0].grad)
