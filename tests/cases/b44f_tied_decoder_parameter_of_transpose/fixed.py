# Tied autoencoder: the decoder weight is meant to be the transpose of the
# encoder weight, so the reconstruction loss should train the encoder weight
# through both the encoder and the decoder.
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class TiedAutoEncoder(nn.Module):
    def __init__(self, inp, hidden):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(inp, hidden, bias=False), nn.Sigmoid())
        # tie the weights: the decoder uses the encoder weight, transposed

    def decode(self, h):
        return F.linear(h, self.encoder[0].weight.t())

    def forward(self, x):
        h = self.encoder(x)
        return self.decode(h)


model = TiedAutoEncoder(16, 4)
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
x = torch.randn(32, 16)

for step in range(20):
    opt.zero_grad()
    out = model(x)
    loss = ((out - x) ** 2).mean()
    loss.backward()
    opt.step()
print("loss:", loss.item())
print("trainable parameters:", sum(p.numel() for p in model.parameters()))

# does the decoder's use of the tied weight send gradient to the encoder weight?
model.zero_grad(set_to_none=True)
h = model.encoder(x).detach()
((model.decode(h) - x) ** 2).mean().backward()
print("encoder weight grad from the decoder:", model.encoder[0].weight.grad)
