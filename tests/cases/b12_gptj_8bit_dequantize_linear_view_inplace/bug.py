"""Fine-tuning 8-bit GPT-J with adapters (gustavecortal/gpt-j-fine-tuning-example#1): the custom
`DequantizeAndLinear` Function returns `F.linear(input, weights_deq, bias)`, which for a 3-D input is a view, and
`FrozenBNBLinear.forward` then adds the adapter in place (`output += self.adapter(input)`): "Output 0 of
DequantizeAndLinearBackward is a view and is being modified inplace ... This behavior is forbidden". The fix that
worked: `return F.linear(input, weights_deq, bias).clone()  # only line changed`."""
import torch
import torch.nn.functional as F
from torch import nn


class DequantizeAndLinear(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input, weights_quantized, absmax, bias):
        weights_deq = weights_quantized.float() * absmax / 127
        ctx.save_for_backward(weights_quantized, absmax)
        return F.linear(input, weights_deq, bias)  # <- autograd_error

    @staticmethod
    def backward(ctx, grad_output):
        weights_quantized, absmax = ctx.saved_tensors
        return grad_output @ (weights_quantized.float() * absmax / 127), None, None, None


class FrozenBNBLinear(nn.Module):
    def __init__(self, weight, bias, adapter_dim=4):
        super().__init__()
        absmax = weight.abs().amax(dim=1, keepdim=True)
        self.register_buffer("weight", torch.round(weight / absmax * 127).to(torch.int8))
        self.register_buffer("absmax", absmax)
        self.register_buffer("bias", bias)
        self.adapter = nn.Sequential(nn.Linear(weight.shape[1], adapter_dim, bias=False),
                                     nn.Linear(adapter_dim, weight.shape[0], bias=False))
        nn.init.zeros_(self.adapter[1].weight)

    def forward(self, input):
        output = DequantizeAndLinear.apply(input, self.weight, self.absmax, self.bias)
        if self.adapter:
            output += self.adapter(input)
        return output


class FrozenBNBEmbedding(nn.Module):
    def __init__(self, weight, adapter_dim=4):
        super().__init__()
        self.register_buffer("weight", weight)
        self.adapter = nn.Sequential(nn.Embedding(weight.shape[0], adapter_dim), nn.Linear(adapter_dim, weight.shape[1]))

    def forward(self, input):
        output = F.embedding(input, self.weight)
        if self.adapter:
            output += self.adapter(input)
        return output


torch.manual_seed(0)
wte, layer = FrozenBNBEmbedding(torch.randn(50, 16)), FrozenBNBLinear(torch.randn(16, 16), torch.zeros(16))
optimizer = torch.optim.Adam(list(wte.adapter.parameters()) + list(layer.adapter.parameters()), lr=1e-3)
tokens, target = torch.randint(0, 50, (2, 5)), torch.randn(2, 5, 16)
for step in range(3):
    loss = F.mse_loss(layer(wte(tokens)), target)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print(f"adapter grad set: {layer.adapter[1].weight.grad is not None}")
