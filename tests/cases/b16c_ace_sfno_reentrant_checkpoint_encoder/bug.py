"""ai2cm/ace (conditional SFNO), https://github.com/ai2cm/ace/pull/1493

What the user saw: with gradient checkpointing on (checkpointing >= 1), the input encoder's parameters
(conditional_model.encoder.0.weight, 0.bias, 2.weight) kept grad=None: training went on with a frozen,
randomly initialised encoder, and nothing louder than a UserWarning ("None of the inputs have
requires_grad=True. Gradients will be None") was raised.
Why: torch.utils.checkpoint was called without use_reentrant=False, so the reentrant variant ran: it runs
the function under no_grad and returns an output with no grad_fn when none of its *inputs* require grad,
which is always so here because the checkpointed input is the data, not a parameter.
Fix (the PR): pass use_reentrant=False to checkpoint.
"""
import torch
import torch.nn as nn
from torch.utils.checkpoint import checkpoint

torch.manual_seed(0)


class ConditionalSFNO(nn.Module):
    def __init__(self, in_chans=3, embed_dim=8, out_chans=3, checkpointing=1):
        super().__init__()
        self.checkpointing = checkpointing
        self.encoder = nn.Sequential(
            nn.Conv2d(in_chans, embed_dim, 1, bias=True),
            nn.GELU(),
            nn.Conv2d(embed_dim, embed_dim, 1, bias=False),
        )
        self.block = nn.Conv2d(embed_dim, embed_dim, 3, padding=1)
        self.decoder = nn.Conv2d(embed_dim, out_chans, 1)

    def forward(self, x):
        if self.checkpointing >= 1:
            x = checkpoint(self.encoder, x)  # <- no_grad
        else:
            x = self.encoder(x)
        x = torch.relu(self.block(x))
        return self.decoder(x)


model = ConditionalSFNO()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
inputs = torch.randn(2, 3, 8, 16)
targets = torch.randn(2, 3, 8, 16)

for step in range(3):
    optimizer.zero_grad()
    loss = nn.functional.mse_loss(model(inputs), targets)
    loss.backward()
    optimizer.step()
    print(step, loss.item())
print("encoder.0.weight.grad:", model.encoder[0].weight.grad)
print("block.weight.grad is None:", model.block.weight.grad is None)
