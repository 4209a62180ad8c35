"""PromptIR issue #6 "self.prompt_param is not learnable", https://github.com/va1shn9v/PromptIR/issues/6:
PromptGenBlock holds the learned prompt components as self.prompt_param = nn.Parameter(...), and its forward
mixes them with weights predicted from the features. The reporter points at the forward (net/model.py#L230 of
commit c27dd8e): only self.prompt_param.data is used there, so the prompts are read as a constant, autograd
records nothing back to the Parameter, its .grad stays None, AdamW skips it and it never updates in training.
Fix (the repository's later model.py): use self.prompt_param itself in forward. The script prints the prompt's
.grad (None) and that it never changed, while the rest of the network trains."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class PromptGenBlock(nn.Module):
    def __init__(self, prompt_dim=16, prompt_len=5, prompt_size=8, lin_dim=16):
        super(PromptGenBlock, self).__init__()
        self.prompt_param = nn.Parameter(torch.rand(1, prompt_len, prompt_dim, prompt_size, prompt_size))
        self.linear_layer = nn.Linear(lin_dim, prompt_len)
        self.conv3x3 = nn.Conv2d(prompt_dim, prompt_dim, kernel_size=3, stride=1, padding=1, bias=False)

    def forward(self, x):
        B, C, H, W = x.shape
        emb = x.mean(dim=(-2, -1))
        prompt_weights = F.softmax(self.linear_layer(emb), dim=1)
        prompt = prompt_weights.unsqueeze(-1).unsqueeze(-1).unsqueeze(-1) * self.prompt_param.unsqueeze(0).repeat(B, 1, 1, 1, 1, 1).squeeze(1)
        prompt = torch.sum(prompt, dim=1)
        prompt = F.interpolate(prompt, (H, W), mode="bilinear")
        prompt = self.conv3x3(prompt)
        return prompt


class TinyPromptIR(nn.Module):
    def __init__(self, dim=16):
        super().__init__()
        self.patch_embed = nn.Conv2d(3, dim, 3, padding=1)
        self.latent = nn.Sequential(nn.Conv2d(dim, dim, 3, padding=1), nn.GELU())
        self.prompt1 = PromptGenBlock(prompt_dim=16, prompt_len=5, prompt_size=8, lin_dim=dim)
        self.reduce_noise_level1 = nn.Conv2d(dim + 16, dim, kernel_size=1)
        self.output = nn.Conv2d(dim, 3, 3, padding=1)

    def forward(self, inp_img):
        latent = self.latent(self.patch_embed(inp_img))
        dec1_param = self.prompt1(latent)
        latent = torch.cat([latent, dec1_param], 1)
        latent = self.reduce_noise_level1(latent)
        return self.output(latent) + inp_img


net = TinyPromptIR()
optimizer = torch.optim.AdamW(net.parameters(), lr=2e-4)
loss_fn = nn.L1Loss()
prompt_before = net.prompt1.prompt_param.detach().clone()
conv_before = net.output.weight.detach().clone()

for step in range(5):
    clean_patch = torch.rand(2, 3, 16, 16)
    degrad_patch = clean_patch + 0.1 * torch.randn_like(clean_patch)  # all-in-one restoration: noisy input
    restored = net(degrad_patch)
    loss = loss_fn(restored, clean_patch)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()

print("prompt_param.grad:", None if net.prompt1.prompt_param.grad is None else net.prompt1.prompt_param.grad.abs().sum().item())
print("prompt_param changed:", not torch.equal(prompt_before, net.prompt1.prompt_param.detach()))
print("output conv changed:", not torch.equal(conv_before, net.output.weight.detach()))
