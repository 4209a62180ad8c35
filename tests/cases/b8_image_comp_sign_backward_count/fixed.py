"""The fixed twin of image_comp_sign_backward_count (https://github.com/1zb/pytorch-image-comp-rnn/issues/4)."""
import torch
import torch.nn.functional as F
from torch import nn
from torch.autograd import Function


class Sign(Function):
    @staticmethod
    def forward(ctx, input, is_training=True):
        prob = input.new(input.size()).uniform_()
        x = input.clone()
        x[(1 - input) / 2 <= prob] = 1
        x[(1 - input) / 2 > prob] = -1
        return x

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output, None


torch.manual_seed(0)
encoder, decoder = nn.Linear(16, 8), nn.Linear(8, 16)
optimizer = torch.optim.Adam([*encoder.parameters(), *decoder.parameters()], lr=1e-3)
images = torch.rand(4, 16)
for step in range(3):
    codes = Sign.apply(torch.tanh(encoder(images)), True)
    loss = F.l1_loss(decoder(codes), images)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.item():.4f}")
