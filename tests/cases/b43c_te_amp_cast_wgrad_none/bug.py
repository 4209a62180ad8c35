# Shape of NVIDIA/TransformerEngine PR #70 ("Fix gradients when using AMP"):
# te.Linear runs its GEMMs in a custom autograd.Function and casts the fp32
# weight to the autocast dtype inside Function.forward. Function.forward runs
# with grad disabled, so the cast weight has requires_grad=False, backward
# skips the wgrad and returns None: the weight silently never trains.
import torch
import torch.nn as nn
from torch.nn.parameter import Parameter

torch.manual_seed(0)
torch.set_printoptions(threshold=8, edgeitems=2)


def cast_if_needed(tensor, dtype):
    """Cast tensor to dtype"""
    return tensor if tensor is None or tensor.dtype == dtype else tensor.to(dtype)  # <- no_grad


class _Linear(torch.autograd.Function):
    @staticmethod
    def forward(ctx, weight, inp, bias, use_bias, activation_dtype):
        in_features = weight.shape[-1]
        inputmat = inp.view((-1, in_features))
        # Cast for native AMP
        inputmat = cast_if_needed(inputmat, activation_dtype)
        weight = cast_if_needed(weight, activation_dtype)
        bias = cast_if_needed(bias, activation_dtype) if use_bias else bias
        out = inputmat @ weight.t()
        if use_bias:
            out = out + bias
        ctx.save_for_backward(inputmat, weight)
        ctx.use_bias = use_bias
        ctx.inp_shape = inp.shape
        return out.view(-1, *inp.shape[1:-1], out.shape[-1])

    @staticmethod
    def backward(ctx, grad_output):
        inputmat, weight = ctx.saved_tensors
        grad_output = grad_output.contiguous().view(-1, grad_output.shape[-1])
        # DGRAD
        dgrad = grad_output @ weight
        wgrad = None
        if weight.requires_grad:
            # WGRAD
            wgrad = grad_output.t() @ inputmat
        grad_bias = grad_output.sum(0) if ctx.use_bias else None
        return (
            wgrad if weight.requires_grad else None,
            dgrad.view(ctx.inp_shape),
            grad_bias,
            None,
            None,
        )


class Linear(nn.Module):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        self.use_bias = bias
        self.weight = Parameter(torch.randn(out_features, in_features) * 0.1)
        self.bias = Parameter(torch.zeros(out_features))

    def set_activation_dtype(self, inp):
        # Native AMP (`torch.autocast`) gets highest priority
        if torch.is_autocast_enabled("cpu"):
            self.activation_dtype = torch.get_autocast_dtype("cpu")
            return
        self.activation_dtype = inp.dtype

    def forward(self, inp):
        self.set_activation_dtype(inp)
        return _Linear.apply(self.weight, inp, self.bias, self.use_bias, self.activation_dtype)


model = nn.Sequential(Linear(16, 32), nn.ReLU(), Linear(32, 4))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(8, 16)
y = torch.randn(8, 4)

w0 = model[0].weight.detach().clone()
for step in range(3):
    optimizer.zero_grad()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = model(x)
        loss = ((out.float() - y) ** 2).mean()
    loss.backward()
    optimizer.step()

print("fc1.weight.grad:", model[0].weight.grad)
print("fc1.bias.grad is None:", model[0].bias.grad is None)
print("fc1.weight changed:", not torch.equal(w0, model[0].weight.detach()))
