"""The binarizer of an RNN image-compression model (1zb/pytorch-image-comp-rnn#4): Sign.forward takes the input and
an is_training flag, but backward returns one gradient, so backward raises "function SignBackward returned an
incorrect number of gradients (expected 2, got 1)"."""
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
        return grad_output  # <- autograd_error


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
