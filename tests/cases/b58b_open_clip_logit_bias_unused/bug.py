# Could not finetune SigLIP models with CLIP loss
# https://github.com/mlfoundations/open_clip/issues/1076
# What went wrong: fine-tuning a SigLIP checkpoint (which has a learnable `logit_bias`) with the
#   softmax CLIP loss. `ClipLoss.forward` receives `logit_bias` from the model output dict but calls
#   `self.get_logits(image_features, text_features, logit_scale)` without it, so `model.logit_bias`
#   never enters the loss. Under DDP this raised "Parameters which did not receive grad for rank 5:
#   .logit_bias"; in a single process the parameter's .grad simply stays None.
# Fix (rwightman, confirmed by the reporter): pass `logit_bias` into the `get_logits()` call.
# Reduced to plain torch: tiny towers instead of ViT / text transformer, random data, one process.
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class CustomTextCLIP(nn.Module):
    def __init__(self, embed_dim=16, vocab_size=50, init_logit_scale=np.log(10), init_logit_bias=-10.0):
        super().__init__()
        self.visual = nn.Sequential(nn.Flatten(), nn.Linear(3 * 8 * 8, 32), nn.GELU(), nn.Linear(32, embed_dim))
        self.text_embed = nn.Embedding(vocab_size, 32)
        self.text_proj = nn.Linear(32, embed_dim)
        self.logit_scale = nn.Parameter(torch.ones([]) * init_logit_scale)
        self.logit_bias = nn.Parameter(torch.ones([]) * init_logit_bias)

    def encode_image(self, image, normalize=False):
        features = self.visual(image)
        return F.normalize(features, dim=-1) if normalize else features

    def encode_text(self, text, normalize=False):
        features = self.text_proj(self.text_embed(text).mean(dim=1))
        return F.normalize(features, dim=-1) if normalize else features

    def forward(self, image, text):
        image_features = self.encode_image(image, normalize=True)
        text_features = self.encode_text(text, normalize=True)
        out_dict = {
            "image_features": image_features,
            "text_features": text_features,
            "logit_scale": self.logit_scale.exp(),
        }
        if self.logit_bias is not None:
            out_dict["logit_bias"] = self.logit_bias
        return out_dict


class ClipLoss(nn.Module):
    def __init__(self, cache_labels=False, rank=0, world_size=1):
        super().__init__()
        self.cache_labels = cache_labels
        self.rank = rank
        self.world_size = world_size
        self.prev_num_logits = 0
        self.labels = {}

    def get_ground_truth(self, device, num_logits) -> torch.Tensor:
        if self.prev_num_logits != num_logits or device not in self.labels:
            labels = torch.arange(num_logits, device=device, dtype=torch.long)
            if self.cache_labels:
                self.labels[device] = labels
                self.prev_num_logits = num_logits
        else:
            labels = self.labels[device]
        return labels

    def get_logits(self, image_features, text_features, logit_scale, logit_bias=None):
        logits_per_image = logit_scale * image_features @ text_features.T
        logits_per_text = logit_scale * text_features @ image_features.T
        if logit_bias is not None:
            logits_per_image += logit_bias
            logits_per_text += logit_bias
        return logits_per_image, logits_per_text

    def forward(self, image_features, text_features, logit_scale, logit_bias=None, output_dict=False):
        device = image_features.device
        logits_per_image, logits_per_text = self.get_logits(image_features, text_features, logit_scale)  # <- unused_parameter

        labels = self.get_ground_truth(device, logits_per_image.shape[0])

        total_loss = (
            F.cross_entropy(logits_per_image, labels) +
            F.cross_entropy(logits_per_text, labels)
        ) / 2

        return {"contrastive_loss": total_loss} if output_dict else total_loss


def train_one_epoch(model, loss, optimizer, num_steps=5, batch_size=8):
    model.train()
    images = torch.randn(batch_size, 3, 8, 8)
    texts = torch.randint(0, 50, (batch_size, 6))
    for step in range(num_steps):

        model_out = model(images, texts)
        losses = loss(**model_out, output_dict=True)
        total_loss = sum(losses.values())

        optimizer.zero_grad()
        total_loss.backward()
        # what DDP's reducer reported: every trainable parameter must have received a grad
        for name, p in model.named_parameters():
            if p.requires_grad and p.grad is None:
                print(f"step {step}: Parameters which did not receive grad: .{name}")
        optimizer.step()
        print(f"step {step}: loss {total_loss.item():.4f}")


model = CustomTextCLIP()
loss = ClipLoss()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
train_one_epoch(model, loss, optimizer)
