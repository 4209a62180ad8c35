# Q-GaLore Linear wrapper can silently skip weight updates when input does not require grad.
# https://github.com/AkaneTendo25/musubi-tuner/issues/90
# What went wrong: QGaLoreLinear stores its weight as a uint8 Parameter with
# requires_grad=False; the dense weight gradient is computed by hand inside
# QGaLoreLinearFunction.backward and stashed in weight.float_grad. When the layer
# input does not require grad and the (frozen) bias is the only other input, no
# input of the custom Function requires grad, so autograd records no node for it:
# backward() never runs, weight.float_grad stays None and the optimizer silently
# skips the layer, which behaves as if frozen.
# Fix (from the issue, closed): pass a tiny non-persistent floating-point autograd
# anchor (requires_grad=True) into the custom Function whenever the quantized
# weight is meant to be trainable, so the backward node is kept alive.
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import Tensor
from torch.nn import Parameter

torch.manual_seed(0)


def _quantize_affine_uint(weight, *, group_size=-1, n_bit=8):
    original_shape = weight.shape
    weight = weight.reshape(-1, group_size) if group_size > 0 else weight
    max_int = 2**n_bit - 1
    compute = weight.float()
    max_val = compute.amax(dim=1, keepdim=True)
    min_val = compute.amin(dim=1, keepdim=True)
    scales = (max_val - min_val).clamp(min=1e-5) / max_int
    zeros = (-torch.round(min_val / scales)).clamp_(0, max_int)
    q = torch.clamp(torch.round(compute / scales) + zeros, 0, max_int).reshape(original_shape).to(torch.uint8)
    return q, scales, zeros


def _dequantize_affine_uint(weight, *, dtype, group_size, scales, zeros):
    original_shape = weight.shape
    if group_size > 0:
        dequant = weight.to(scales.dtype).reshape(-1, group_size)
    else:
        dequant = weight.to(scales.dtype).reshape(scales.shape[0], -1)
    return ((dequant - zeros) * scales).reshape(original_shape).to(dtype)


class QGaLoreLinearFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: Tensor, weight: Parameter, bias, anchor):
        float_weight = _dequantize_affine_uint(
            weight, dtype=x.dtype, group_size=int(weight.group_size), scales=weight.scales, zeros=weight.zeros
        )
        ctx.save_for_backward(x, weight, bias)
        return F.linear(x, float_weight, bias)

    @staticmethod
    def backward(ctx, grad_output: Tensor):
        x, weight, bias = ctx.saved_tensors
        float_weight = _dequantize_affine_uint(
            weight, dtype=grad_output.dtype, group_size=int(weight.group_size), scales=weight.scales, zeros=weight.zeros
        )
        grad_input = grad_output @ float_weight
        grad_bias = grad_output.reshape(-1, bias.shape[0]).sum(0)
        out_features, in_features = weight.shape
        grad_weight = grad_output.reshape(-1, out_features).t() @ x.reshape(-1, in_features)
        if getattr(weight, "float_grad", None) is None:
            weight.float_grad = grad_weight
        else:
            weight.float_grad = weight.float_grad + grad_weight
        return grad_input, None, grad_bias, None


class QGaLoreLinear(nn.Module):
    def __init__(self, source: nn.Linear, *, group_size=64):
        super().__init__()
        q_weight, scales, zeros = _quantize_affine_uint(source.weight.detach(), group_size=group_size)
        self.group_size = group_size
        self.weight = Parameter(q_weight, requires_grad=False)
        self.register_buffer("scales", scales)
        self.register_buffer("zeros", zeros)
        self.bias = Parameter(source.bias.detach().clone(), requires_grad=source.bias.requires_grad)
        self._refresh_weight_attrs()
        self.register_buffer("_qgalore_anchor", torch.zeros((), requires_grad=True), persistent=False)

    def _refresh_weight_attrs(self):
        self.weight._qgalore_weight = True
        self.weight.scales = self.scales
        self.weight.zeros = self.zeros
        self.weight.group_size = self.group_size
        self.weight.float_grad = getattr(self.weight, "float_grad", None)

    def forward(self, input: Tensor) -> Tensor:
        self._refresh_weight_attrs()
        return QGaLoreLinearFunction.apply(input, self.weight, self.bias, self._qgalore_anchor)


class QGaLoreAdamW8bit(torch.optim.Optimizer):  # reduced to a plain SGD step on the dequantized weight
    def __init__(self, params, lr=1e-2):
        super().__init__(params, dict(lr=lr))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            for p in group["params"]:
                if getattr(p, "_qgalore_weight", False):
                    if p.float_grad is None:
                        continue  # silently skipped
                    w = _dequantize_affine_uint(p, dtype=torch.float32, group_size=p.group_size, scales=p.scales, zeros=p.zeros)
                    w -= group["lr"] * 50 * p.float_grad
                    q, s, z = _quantize_affine_uint(w, group_size=p.group_size)
                    p.copy_(q); p.scales.copy_(s); p.zeros.copy_(z)
                    p.float_grad = None
                elif p.grad is not None:
                    p -= group["lr"] * p.grad


# base model: frozen Linear layers; proj_in is wrapped by Q-GaLore, proj_out is trained as usual
base_in = nn.Linear(32, 64)
base_in.requires_grad_(False)
proj_in = QGaLoreLinear(base_in)
proj_out = nn.Linear(64, 8)
optimizer = QGaLoreAdamW8bit(list(proj_in.parameters()) + list(proj_out.parameters()))

x = torch.randn(16, 32)  # raw input: does not require grad
y = torch.randn(16, 8)
w_before = proj_in.weight.clone()
for step in range(3):
    loss = F.mse_loss(proj_out(torch.relu(proj_in(x))), y)
    loss.backward()
    print("step", step, "proj_in.weight.float_grad:", None if proj_in.weight.float_grad is None else tuple(proj_in.weight.float_grad.shape))
    optimizer.step()
    for p in proj_out.parameters():
        p.grad = None

print("loss", loss.item())
print("proj_in quantized weight changed:", not torch.equal(w_before, proj_in.weight))
