"""BigVGAN's AMPBlock with Snake activations (sh-lee-prml/BigVGAN#10): the per-layer alphas are nn.Parameters kept
in a plain Python list, so they are not registered: the generator's optimizer never sees them, and although every
forward uses them and backward fills their .grad, they stay at their initial value of one."""
import torch
import torch.nn.functional as F
from torch import nn


def snake(x, alpha):
    return x + (1.0 / (alpha + 1e-9)) * torch.sin(alpha * x) ** 2


class AMPBlock1(nn.Module):
    def __init__(self, channels=4, kernel_size=3, dilation=(1, 3)):
        super().__init__()
        self.convs1 = nn.ModuleList(nn.Conv1d(channels, channels, kernel_size, dilation=d, padding=d) for d in dilation)
        self.convs2 = nn.ModuleList(nn.Conv1d(channels, channels, kernel_size, padding=1) for _ in dilation)
        self.alpha1 = [nn.Parameter(torch.ones(1, channels, 1)) for i in range(len(self.convs1))]  # <- non_parameter_tensor
        self.alpha2 = [nn.Parameter(torch.ones(1, channels, 1)) for i in range(len(self.convs2))]

    def forward(self, x):
        for c1, c2, a1, a2 in zip(self.convs1, self.convs2, self.alpha1, self.alpha2):
            xt = c1(snake(x, a1))
            xt = c2(snake(xt, a2))
            x = xt + x
        return x


torch.manual_seed(0)
generator = nn.Sequential(nn.Conv1d(1, 4, 7, padding=3), AMPBlock1(), nn.Conv1d(4, 1, 7, padding=3))
optim_g = torch.optim.AdamW(generator.parameters(), lr=2e-3, betas=(0.8, 0.99))
mel, wav = torch.randn(2, 1, 32), torch.randn(2, 1, 32)
for step in range(3):
    loss_mel = F.l1_loss(generator(mel), wav)
    optim_g.zero_grad()
    loss_mel.backward()
    optim_g.step()
    print(f"step {step}: loss {loss_mel.item():.4f}")
alpha = generator[1].alpha1[0]
print("alpha grad is set:", alpha.grad is not None, "| alpha still at 1.0:", bool((alpha == 1.0).all()))
