"""'"None" gradient on the CUDA device' (pytorch/pytorch#22860): x is created with requires_grad=True and then
rebound to x.to(device); on the GPU that is a copy, a non-leaf, so after backward x.grad is None without an
error, while the same script on the CPU prints the gradient. A dtype change stands in for the copy to the GPU."""
import torch

torch.manual_seed(0)
x = torch.tensor([[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0], [9.0, 10.0, 11.0, 12.0]], requires_grad=True)
device, dtype = torch.device("cpu"), torch.float64
x = x.to(device, dtype)  # <- non_leaf_watched
for it in range(3):
    function = 10 * (x ** 2).sum()
    function.backward()
    print(x.grad, "<- gradient")
    with torch.no_grad():
        if x.grad is not None:
            x -= 0.01 * x.grad
            x.grad = None
