"""pytorch/ao pull request #4817 "Fix NVFP4/MX QAT backward dropping the bias gradient",
https://github.com/pytorch/ao/pull/4817: the custom autograd Function behind NVFP4FakeQuantizedLinear
(torchao/prototype/qat/nvfp4.py, `_NVFP4QuantizedForwardFakeQuantizedBackward`) takes `bias` in forward and adds it
in the low-precision addmm, but its backward returns `None` in the bias slot
(`return grad_input, grad_weight, None, None, None`). After `loss.backward()`, `linear.bias.grad` is None for every
QAT linear with a bias, so the optimizer never updates any bias during the whole QAT run; no error is raised, the
model just trains with frozen biases.
Fix (the PR's): return the bias gradient, `grad_output.sum(0)` (grad_output is 2-D there), when the bias needs it.
The line to change is in torchao's code (the library's custom Function), not in the user's training script.
NVFP4 quantization itself (NVFP4Tensor, _addmm_nvfp4_dispatch, Blackwell-only kernels) is a short fake-quantize
stand-in on CPU; the Function and module keep torchao's structure."""
from dataclasses import dataclass
from typing import Optional

import torch
import torch.nn as nn


# --- torchao.prototype.mx_formats stand-in (NVFP4 round-trip on a coarse e2m1-like grid) ---------
def _nvfp4_round_trip(x: torch.Tensor, use_per_tensor_scale: bool) -> torch.Tensor:
    scale = x.abs().amax().clamp(min=1e-12) / 6.0 if use_per_tensor_scale else torch.tensor(1.0)
    return (torch.round(x / scale * 2.0) / 2.0).clamp(-6.0, 6.0) * scale


# --- torchao/prototype/qat/nvfp4.py ------------------------------------------------------------------
@dataclass
class NVFP4FakeQuantizeConfig:
    use_per_tensor_scale: bool = True
    use_swizzled_scales: bool = False
    use_triton_kernel: bool = False


class _NVFP4QuantizedForwardFakeQuantizedBackward(torch.autograd.Function):
    """
    Autograd function for NVFP4 quantization + addmm in low precision during forward,
    and fake quantization in high precision during backward.
    """

    @staticmethod
    def forward(ctx, _input, weight, bias, activation_config, weight_config):
        _input = _nvfp4_round_trip(_input, activation_config.use_per_tensor_scale)
        weight = _nvfp4_round_trip(weight, weight_config.use_per_tensor_scale)
        ctx.save_for_backward(_input, weight)
        out = torch.mm(_input, weight.t())
        return out + bias if bias is not None else out

    @staticmethod
    def backward(ctx, grad_output):
        _input, weight = ctx.saved_tensors
        grad_input = torch.mm(grad_output, weight)
        grad_weight = torch.mm(grad_output.t(), _input)
        return grad_input, grad_weight, None, None, None  # <- non_differentiable


class NVFP4FakeQuantizedLinear(torch.nn.Linear):
    def __init__(self, in_features, out_features, bias=False, activation_config=None, weight_config=None):
        super().__init__(in_features, out_features, bias)
        self.activation_config = activation_config
        self.weight_config = weight_config

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() == 3:
            batch_size = x.shape[0]
            x = x.view(-1, x.shape[-1])
        else:
            batch_size = None
        fq = _NVFP4QuantizedForwardFakeQuantizedBackward.apply(
            x, self.weight, self.bias, self.activation_config, self.weight_config
        )
        if batch_size is not None:
            return fq.view(batch_size, -1, fq.shape[-1])
        return fq

    @classmethod
    def from_linear(cls, mod: torch.nn.Linear, activation_config: Optional[NVFP4FakeQuantizeConfig] = None,
                    weight_config: Optional[NVFP4FakeQuantizeConfig] = None):
        new_linear = NVFP4FakeQuantizedLinear(mod.in_features, mod.out_features, mod.bias is not None,
                                              activation_config=activation_config, weight_config=weight_config)
        new_linear.weight = mod.weight
        new_linear.bias = mod.bias
        return new_linear


# --- the user's QAT fine-tuning script (quantize_(model, QATConfig(..., step="prepare")) in short) --
torch.manual_seed(0)
torch.set_num_threads(1)
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
cfg = NVFP4FakeQuantizeConfig()
for idx in (0, 2):
    model[idx] = NVFP4FakeQuantizedLinear.from_linear(model[idx], activation_config=cfg, weight_config=cfg)

optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
bias_before = model[2].bias.detach().clone()
for step in range(5):
    x = torch.randn(2, 8, 16)  # (batch, seq, hidden): the 3-D path of the module
    y = torch.randint(0, 4, (2 * 8,))
    loss = nn.functional.cross_entropy(model(x).reshape(-1, 4), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()

print("last linear bias.grad is None:", model[2].bias.grad is None)
print("last linear bias changed:", not torch.equal(bias_before, model[2].bias))
