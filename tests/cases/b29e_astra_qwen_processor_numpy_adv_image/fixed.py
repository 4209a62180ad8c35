"""ASTRA issue #1 "Inquiry about PGD adversarial image generation code", https://github.com/ASTRAL-Group/ASTRA/issues/1:
generating PGD adversarial images for Qwen2.5-VL, the reporter passes adv_image (clean image + the noise being
optimised) through the Qwen-VL image processor, "which converts adv_image from tensor to numpy array, hence breaking
the gradient of the loss w.r.t the noise": the processor's to_numpy does .detach().cpu().numpy() on it, normalises and
patchifies in NumPy and builds pixel_values anew with torch.tensor, so the loss reaches the model's weights but never
the noise; adv_noise.grad stays None and the sign step fails.
Fix: do the processor's normalisation and patchifying in torch on the tensor itself, so pixel_values keep the graph
back to the noise. The script raises AttributeError on adv_noise.grad (None)."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
MEAN = torch.tensor([0.4815, 0.4578, 0.4082])
STD = torch.tensor([0.2686, 0.2613, 0.2758])


class Qwen2VLImageProcessor:
    def __init__(self, patch_size=4):
        self.patch_size = patch_size

    def __call__(self, images):
        image = images[0]  # (C, H, W) in [0, 1], kept in torch
        image = (image - MEAN[:, None, None]) / STD[:, None, None]
        C, H, W = image.shape
        P = self.patch_size
        patches = image.reshape(C, H // P, P, W // P, P).permute(1, 3, 0, 2, 4)
        flatten_patches = patches.reshape((H // P) * (W // P), C * P * P)
        return {"pixel_values": flatten_patches, "image_grid_thw": (1, H // P, W // P)}


class TinyQwenVL(nn.Module):
    def __init__(self, vocab=100, dim=48, patch_dim=48):
        super().__init__()
        self.visual = nn.Sequential(nn.Linear(patch_dim, dim), nn.GELU(), nn.Linear(dim, dim))
        self.embed_tokens = nn.Embedding(vocab, dim)
        self.lm_head = nn.Linear(dim, vocab)

    def forward(self, input_ids, pixel_values):
        image_embeds = self.visual(pixel_values)
        h = self.embed_tokens(input_ids) + image_embeds.mean(dim=0)
        return self.lm_head(torch.tanh(h))


model = TinyQwenVL().eval()
processor = Qwen2VLImageProcessor()
image = torch.rand(1, 3, 16, 16)
input_ids = torch.randint(0, 100, (1, 8))
target_ids = torch.randint(0, 100, (1, 8))  # the jailbreak target
epsilon, alpha, num_iter = 16 / 255, 1 / 255, 5

adv_noise = (torch.rand_like(image) * 2 - 1) * epsilon
adv_noise.requires_grad_(True)
noise_before = adv_noise.detach().clone()
for t in range(num_iter):
    adv_image = (image + adv_noise).clamp(0, 1)
    inputs = processor(adv_image)
    logits = model(input_ids, inputs["pixel_values"])
    loss = F.cross_entropy(logits.reshape(-1, 100), target_ids.reshape(-1))
    model.zero_grad()
    loss.backward()
    adv_noise.data = (adv_noise.data - alpha * adv_noise.grad.detach().sign()).clamp(-epsilon, epsilon)
    adv_noise.grad.zero_()
    print("iter", t, "loss %.4f" % loss.item())

print("adv_noise changed:", not torch.equal(noise_before, adv_noise.detach()))
