"""UCSC-VLAA/vllm-safety-benchmark issue #1, https://github.com/UCSC-VLAA/vllm-safety-benchmark/issues/1 (pointing at
Unispac/Visual-Adversarial-Examples-Jailbreak-Large-Language-Models#9): running the visual-adversarial-example attack
on LLaVA-1.5, the PGD loop optimises an image noise adv_noise through the frozen model and target_loss.backward()
raises "element 0 of tensors does not require grad and does not have a grad_fn": "the gradient cannot back-propagate
to the visual encoder in LLaVA" (the reporter's fix). LLaVA-1.5's CLIPVisionTower.forward is decorated with
@torch.no_grad() (written for a tower that is never trained), so the image features are constants, the loss has no
graph back to adv_noise, and with every weight frozen for the attack it has no graph at all.
Fix: run the vision tower's forward with gradients enabled (drop the decorator). The script raises the RuntimeError."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class CLIPVisionTower(nn.Module):
    def __init__(self, dim=32):
        super().__init__()
        self.patch_embed = nn.Conv2d(3, dim, 8, stride=8)
        self.encoder = nn.TransformerEncoderLayer(dim, 4, 64, batch_first=True)

    def forward(self, images):
        image_forward_outs = self.encoder(self.patch_embed(images).flatten(2).transpose(1, 2))
        return image_forward_outs


class TinyLlava(nn.Module):
    def __init__(self, vocab=100, dim=48):
        super().__init__()
        self.vision_tower = CLIPVisionTower()
        self.mm_projector = nn.Sequential(nn.Linear(32, dim), nn.GELU(), nn.Linear(dim, dim))
        self.embed_tokens = nn.Embedding(vocab, dim)
        self.lm_head = nn.Linear(dim, vocab)

    def forward(self, images, input_ids):
        image_features = self.mm_projector(self.vision_tower(images))
        h = self.embed_tokens(input_ids) + image_features.mean(dim=1, keepdim=True)  # text attends to the image
        return self.lm_head(torch.tanh(h))


def normalize(images):
    mean = torch.tensor([0.4815, 0.4578, 0.4082]).view(1, 3, 1, 1)
    std = torch.tensor([0.2686, 0.2613, 0.2758]).view(1, 3, 1, 1)
    return (images - mean) / std


model = TinyLlava().eval()
model.requires_grad_(False)  # the attack only optimises the image
img = torch.rand(1, 3, 32, 32)
prompt_ids = torch.randint(0, 100, (1, 6))
targets = torch.randint(0, 100, (1, 6))  # the harmful target continuation
alpha, num_iter = 1 / 255, 5

adv_noise = torch.rand_like(img).requires_grad_(True)
noise_before = adv_noise.detach().clone()
for t in range(num_iter):
    x_adv = normalize(adv_noise)
    logits = model(x_adv, prompt_ids)
    target_loss = F.cross_entropy(logits.reshape(-1, 100), targets.reshape(-1))
    target_loss.backward()
    adv_noise.data = (adv_noise.data - alpha * adv_noise.grad.detach().sign()).clamp(0, 1)
    adv_noise.grad.zero_()
    model.zero_grad()
    print("iter", t, "target_loss %.4f" % target_loss.item())

print("adv_noise changed:", not torch.equal(noise_before, adv_noise.detach()))
