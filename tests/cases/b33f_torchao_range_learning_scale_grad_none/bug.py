"""pytorch/ao pull request #2280 "Fix QAT range learning, ensure scales get gradients",
https://github.com/pytorch/ao/pull/2280: with QAT range learning (FakeQuantizeConfig(..., range_learning=True) and
initialize_fake_quantizers(m, example_inputs) before the optimizer is built), the fake quantizer's scale and
zero_point become nn.Parameters meant to be trained. But the fake quantization ran through the custom
autograd.Function _GenericFakeQuantize, whose backward returns `gy * mask, None, None, ...`: it nulls every
gradient except the input's, so the scales get no gradient at all (scale.grad stays None) and the optimizer never
moves them; only the weights train.
Fix (the PR's): shrink the autograd.Function to the rounding only (_Round, a straight-through round) and write the
rest of the fake quantization (divide by the scale, add/subtract the zero point, clamp, multiply by the scale) with
ordinary ops that autograd sees, so the scales and zero points get their gradients. torchao's quantize_ and its
config classes are reduced to one FakeQuantizedLinear with a group-wise int4 weight quantizer."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(1)


class _GenericFakeQuantize(torch.autograd.Function):
    """Generic fake quantize with backward STE (torchao/quantization/qat/utils.py)."""

    @staticmethod
    def forward(ctx, input, block_size, scales, zero_points, quant_min, quant_max):
        x = input.reshape(-1, block_size)
        q = x.div(scales.reshape(-1, 1)).round().add(zero_points.reshape(-1, 1))
        dq = q.clamp(quant_min, quant_max).sub(zero_points.reshape(-1, 1)).mul(scales.reshape(-1, 1))
        mask = torch.logical_and(q >= quant_min, q <= quant_max)
        ctx.save_for_backward(mask)
        return dq.reshape_as(input)

    @staticmethod
    def backward(ctx, gy):
        (mask,) = ctx.saved_tensors
        return (gy.reshape(mask.shape) * mask).reshape_as(gy), None, None, None, None, None  # <- non_differentiable


class FakeQuantizer(nn.Module):
    """Group-wise symmetric int4 weight fake quantizer with range learning."""

    def __init__(self, group_size=8, range_learning=True):
        super().__init__()
        self.group_size = group_size
        self.range_learning = range_learning
        self.quant_min, self.quant_max = -8, 7
        self.scale = None
        self.zero_point = None
        self._initialized = False

    def forward(self, x):
        if self.range_learning and not self._initialized:
            raise ValueError("call initialize_fake_quantizers() before training with range learning")
        if self.scale is None:
            with torch.no_grad():
                absmax = x.reshape(-1, self.group_size).abs().amax(dim=1)
                scale = (absmax / self.quant_max).clamp(min=1e-6)
            self.scale = nn.Parameter(scale, requires_grad=True)
            self.zero_point = nn.Parameter(torch.zeros_like(scale), requires_grad=True)
        return _GenericFakeQuantize.apply(
            x, self.group_size, self.scale, self.zero_point, self.quant_min, self.quant_max
        )


class FakeQuantizedLinear(nn.Linear):
    def __init__(self, in_features, out_features, bias=False):
        super().__init__(in_features, out_features, bias)
        self.weight_fake_quantizer = FakeQuantizer()

    def forward(self, x):
        return F.linear(x, self.weight_fake_quantizer(self.weight), self.bias)


def initialize_fake_quantizers(model, example_inputs):
    for m in model.modules():
        if isinstance(m, FakeQuantizer):
            m._initialized = True
    model(*example_inputs)


model = nn.Sequential(FakeQuantizedLinear(32, 64), nn.ReLU(), FakeQuantizedLinear(64, 16))
example_inputs = (torch.randn(4, 32),)
initialize_fake_quantizers(model, example_inputs)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
quantizer = model[0].weight_fake_quantizer
scale_before = quantizer.scale.detach().clone()
data, target = torch.randn(64, 32), torch.randn(64, 16)

for step in range(5):
    optimizer.zero_grad()
    loss = F.mse_loss(model(data), target)
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.4f}")

print("scale.grad is None:", quantizer.scale.grad is None)
print("scale changed:", not torch.equal(scale_before, quantizer.scale))
