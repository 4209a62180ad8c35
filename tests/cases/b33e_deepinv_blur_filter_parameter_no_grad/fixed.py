"""deepinv issue #438 "Physics parameters are non-differentiable",
https://github.com/deepinv/deepinv/issues/438: blind deblurring, estimating the blur kernel itself by gradient
descent through the forward operator. The user passes a filter that requires grad to physics.A(x, filter=filter)
and asks torch.autograd.grad(loss, filter); it fails with "element 0 of tensors does not require grad and does not
have a grad_fn". Why (the reporter, a deepinv maintainer): Physics.update_parameters() stores every new parameter
as torch.nn.Parameter(value, requires_grad=False), a fresh leaf that shares the values but not the history, so the
convolution never sees the user's filter and the measurement y_cur does not depend on it.
Fix (the thread's): store it with self.register_buffer(key, value), which keeps the tensor itself. This fixed
twin applies it; the kernel is estimated."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(1)


class Physics(nn.Module):
    def update_parameters(self, **kwargs):
        if kwargs:
            for key, value in kwargs.items():
                if value is not None and hasattr(self, key) and isinstance(value, torch.Tensor):
                    self.register_buffer(key, value)

    def forward(self, x, **kwargs):
        return self.A(x, **kwargs)


class Blur(Physics):
    def __init__(self, filter=None, padding="circular", device="cpu"):
        super().__init__()
        self.padding = padding
        self.device = device
        self.register_buffer("filter", torch.ones(1, 1, 5, 5) / 25 if filter is None else filter)

    def A(self, x, filter=None, **kwargs):
        self.update_parameters(filter=filter, **kwargs)
        h = self.filter
        p = h.shape[-1] // 2
        x = F.pad(x, (p, p, p, p), mode=self.padding)
        return F.conv2d(x, h.flip(-1, -2))


# ground truth: a sharp image x blurred by an unknown kernel
x = torch.rand(1, 1, 32, 32)
true_filter = torch.exp(-((torch.arange(5.0) - 2) ** 2) / 2)
true_filter = (true_filter[:, None] * true_filter[None, :]).view(1, 1, 5, 5)
true_filter /= true_filter.sum()
y = F.conv2d(F.pad(x, (2, 2, 2, 2), mode="circular"), true_filter.flip(-1, -2))

physics = Blur(device="cpu")
filter = torch.rand((1, 1, 5, 5))
filter /= filter.sum(dim=(-2, -1), keepdim=True)
filter.requires_grad_(True)
start = filter.detach().clone()

lr = 0.1
for step in range(20):
    with torch.enable_grad():
        y_cur = physics.A(x, filter=filter)
        loss = F.mse_loss(y_cur, y)
    grad = torch.autograd.grad(loss, filter)[0]
    with torch.no_grad():
        filter -= lr * grad
    if step % 5 == 0:
        print(f"step {step}: loss {loss.item():.6f}")

print("filter changed:", not torch.equal(start, filter.detach()))
print("distance to true kernel:", (filter.detach() - true_filter).abs().sum().item())
