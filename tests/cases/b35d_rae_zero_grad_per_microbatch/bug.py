# Diffusion-style training loop with gradient accumulation over micro-batches (RAE stage-2 train.py shape).
# zero_grad is called inside the micro-batch loop, so every micro-batch wipes the gradients
# the previous ones accumulated: the optimizer step only ever sees the last micro-batch.
import torch
import torch.nn as nn

torch.manual_seed(0)


class Encoder(nn.Module):  # frozen autoencoder, used only to make latents
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(12, 6)

    def encode(self, x):
        return self.proj(x)


class DiT(nn.Module):
    def __init__(self, dim=6, num_classes=4):
        super().__init__()
        self.y_embed = nn.Embedding(num_classes, dim)
        self.t_embed = nn.Linear(1, dim)
        self.net = nn.Sequential(nn.Linear(dim, 16), nn.SiLU(), nn.Linear(16, dim))

    def forward(self, x, t, y):
        return self.net(x + self.t_embed(t) + self.y_embed(y))


def training_losses(model, x1, model_kwargs):
    t = torch.rand(x1.shape[0], 1)
    x0 = torch.randn_like(x1)
    xt = t * x1 + (1 - t) * x0
    pred = model(xt, t, **model_kwargs)
    return {"loss": ((pred - (x1 - x0)) ** 2).mean(dim=1)}


rae = Encoder().eval()
model = DiT()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.0)
grad_accum_steps = 4
loader = [(torch.randn(8, 12), torch.randint(0, 4, (8,))) for _ in range(grad_accum_steps)]

use_bf16 = False
w = model.net[0].weight
expected = torch.zeros_like(w)  # what the accumulated gradient should be at the step

accum_counter = 0
step_loss_accum = 0.0
for x, y in loader:
    with torch.no_grad():
        x = rae.encode(x)
    model_kwargs = dict(y=y)
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=use_bf16):
        loss_tensor = training_losses(model, x, model_kwargs)["loss"].mean()
    step_loss_accum += loss_tensor.item()
    expected += torch.autograd.grad(loss_tensor / grad_accum_steps, w, retain_graph=True)[0]
    opt.zero_grad(set_to_none=True)  # <- optimizer
    (loss_tensor / grad_accum_steps).backward()
    accum_counter += 1

    if accum_counter < grad_accum_steps:
        continue

    print("grad holds all micro-batches:", torch.allclose(w.grad, expected), "| grad norm", w.grad.norm().item(), "expected", expected.norm().item())
    opt.step()
    accum_counter = 0
    step_loss_accum = 0.0
