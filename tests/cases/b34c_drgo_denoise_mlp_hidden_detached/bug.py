"""DRGO (user683/DRGO#1): the reverse-diffusion denoiser MLP calls h.detach() before every linear layer and
every tanh, so the x0-prediction loss reaches only the last output layer; the time-embedding layer and the input
layers never get a gradient and keep their initial weights. The author: the detach was left from debugging,
"It should be `h = torch.tanh(h)`" (the fix drops the .detach() calls)."""
import math
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


def timestep_embedding(timesteps, dim, max_period=10000):
    half = dim // 2
    freqs = torch.exp(-math.log(max_period) * torch.arange(start=0, end=half, dtype=torch.float32) / half)
    args = timesteps[:, None].float() * freqs[None]
    return torch.cat([torch.cos(args), torch.sin(args)], dim=-1)


class MLP(nn.Module):
    """A deep neural network for the reverse diffusion process."""

    def __init__(self, in_dims, out_dims, emb_size, dropout=0.5):
        super().__init__()
        self.time_emb_dim = emb_size
        self.emb_layer = nn.Linear(self.time_emb_dim, self.time_emb_dim)
        in_dims_temp = [in_dims[0] + self.time_emb_dim] + in_dims[1:]
        self.in_layers = nn.ModuleList([nn.Linear(d_in, d_out) for d_in, d_out in zip(in_dims_temp[:-1], in_dims_temp[1:])])
        self.out_layers = nn.ModuleList([nn.Linear(d_in, d_out) for d_in, d_out in zip(out_dims[:-1], out_dims[1:])])
        self.drop = nn.Dropout(dropout)

    def forward(self, x, timesteps):
        time_emb = timestep_embedding(timesteps, self.time_emb_dim)
        emb = self.emb_layer(time_emb)
        x = self.drop(x)
        h = torch.cat([x, emb], dim=-1)
        for i, layer in enumerate(self.in_layers):
            h = layer(h.detach())
            h = torch.tanh(h.detach())  # <- detach
        for i, layer in enumerate(self.out_layers):
            h = layer(h.detach())
            if i != len(self.out_layers) - 1:
                h = torch.tanh(h.detach())
        return h


class DiffusionProcess(nn.Module):
    def __init__(self, noise_min=1e-4, noise_max=2e-2, steps=20):
        super().__init__()
        self.steps = steps
        betas = torch.linspace(noise_min, noise_max, steps, dtype=torch.float64)
        self.alphas_cumprod = torch.cumprod(1.0 - betas, dim=0)
        self.sqrt_alphas_cumprod = torch.sqrt(self.alphas_cumprod)
        self.sqrt_one_minus_alphas_cumprod = torch.sqrt(1.0 - self.alphas_cumprod)

    def forward_process(self, emb_s, t, noise):
        a = self.sqrt_alphas_cumprod[t].float()[:, None]
        b = self.sqrt_one_minus_alphas_cumprod[t].float()[:, None]
        return a * emb_s + b * noise

    def caculate_losses(self, model, emb_s):
        ts = torch.randint(0, self.steps, (emb_s.size(0),)).long()
        noise = torch.randn_like(emb_s)
        emb_t = self.forward_process(emb_s, ts, noise)
        model_output = model(emb_t, ts)
        mse = ((emb_s - model_output) ** 2).mean(dim=1)
        return {"loss": mse, "pred_xstart": model_output}


n_dim, emb_size = 16, 8
model = MLP([n_dim, 32], [32, n_dim], emb_size)
diffusion = DiffusionProcess()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
emb_before = model.emb_layer.weight.detach().clone()
in_before = model.in_layers[0].weight.detach().clone()
user_emb = torch.randn(64, n_dim)  # stands in for the LightGCN user embeddings the diffusion denoises

for step in range(5):
    batch = user_emb[torch.randint(0, 64, (16,))]
    terms = diffusion.caculate_losses(model, batch)
    loss = terms["loss"].mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()

print("emb_layer.weight.grad is None:", model.emb_layer.weight.grad is None)
print("in_layers[0].weight.grad is None:", model.in_layers[0].weight.grad is None)
print("out_layers[0].weight.grad is None:", model.out_layers[0].weight.grad is None)
print("emb_layer changed:", not torch.equal(emb_before, model.emb_layer.weight))
print("in_layers[0] changed:", not torch.equal(in_before, model.in_layers[0].weight))
