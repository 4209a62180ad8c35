"""The fixed twin: the tensor is created on its device and dtype directly, so it is the leaf (pytorch/pytorch#22860)."""
import torch

torch.manual_seed(0)
device, dtype = torch.device("cpu"), torch.float64
x = torch.tensor([[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0], [9.0, 10.0, 11.0, 12.0]], device=device, dtype=dtype,
                 requires_grad=True)
for it in range(3):
    function = 10 * (x ** 2).sum()
    function.backward()
    print(x.grad, "<- gradient")
    with torch.no_grad():
        if x.grad is not None:
            x -= 0.01 * x.grad
            x.grad = None
