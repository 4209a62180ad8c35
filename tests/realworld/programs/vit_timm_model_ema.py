"""ViT training with timm's ModelEmaV2, reduced from timm's train.py
(https://github.com/huggingface/pytorch-image-models/blob/main/train.py, `train_one_epoch`) with the model from
timm/models/vision_transformer.py (VisionTransformer: cls_token / pos_embed Parameters, `no_weight_decay()`),
timm/utils/model_ema.py (ModelEmaV2), timm/optim (param_groups_weight_decay + AdamW), timm/scheduler
(CosineLRScheduler with warmup, `step_update(num_updates)`) and timm/loss (LabelSmoothingCrossEntropy), all written
as small stand-ins shaped like the library code. Tiny random "images" (3x16x16, 4 classes).

Suspicious-but-correct patterns kept:
  - `cls_token` and `pos_embed` are bare nn.Parameters on the model (not in any submodule); cls_token is initialised
    with std 1e-6 and only enters the loss through `cls_token.expand(B, -1, -1)` + torch.cat, and the head reads
    `x[:, 0]` (global_pool='token'); both are put in a no-weight-decay param group via `model.no_weight_decay()`
    (together with every 1-D param / bias);
  - ModelEmaV2 is an nn.Module holding `deepcopy(model)` in eval mode: its Parameters keep requires_grad=True but are
    never in the optimizer and never get a gradient; they are written in place under `torch.no_grad()` with
    `ema_v.copy_(decay * e + (1 - decay) * m)` over zipped `state_dict().values()` after each optimizer step;
  - `optimizer.zero_grad()` comes *after* `optimizer.step()` (timm's order), right before the EMA update;
  - the LR scheduler writes `param_group["lr"]` in place from `step_update(num_updates)`, starting at a small warmup
    LR; gradient clipping with `clip_grad_norm_`; loss logged with `loss.item()`;
  - validation of both the model and the EMA copy under `torch.no_grad()` in eval mode.
"""
import copy
import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F


# ---- timm/models/vision_transformer.py (stand-in) ----
class PatchEmbed(nn.Module):
    def __init__(self, img_size=16, patch_size=4, in_chans=3, embed_dim=32):
        super().__init__()
        self.num_patches = (img_size // patch_size) ** 2
        self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size=patch_size, stride=patch_size)
        self.norm = nn.Identity()

    def forward(self, x):
        x = self.proj(x).flatten(2).transpose(1, 2)  # NCHW -> NLC
        return self.norm(x)


class Attention(nn.Module):
    def __init__(self, dim, num_heads=2, qkv_bias=True):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        self.attn_drop = nn.Dropout(0.0)
        self.proj = nn.Linear(dim, dim)
        self.proj_drop = nn.Dropout(0.0)

    def forward(self, x):
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        x = F.scaled_dot_product_attention(q, k, v)  # timm's fused_attn path
        x = x.transpose(1, 2).reshape(B, N, C)
        return self.proj_drop(self.proj(x))


class Mlp(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class Block(nn.Module):
    def __init__(self, dim, num_heads, mlp_ratio=2.0):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, eps=1e-6)
        self.attn = Attention(dim, num_heads)
        self.ls1 = nn.Identity()
        self.drop_path1 = nn.Identity()
        self.norm2 = nn.LayerNorm(dim, eps=1e-6)
        self.mlp = Mlp(dim, int(dim * mlp_ratio))
        self.ls2 = nn.Identity()
        self.drop_path2 = nn.Identity()

    def forward(self, x):
        x = x + self.drop_path1(self.ls1(self.attn(self.norm1(x))))
        x = x + self.drop_path2(self.ls2(self.mlp(self.norm2(x))))
        return x


class VisionTransformer(nn.Module):
    def __init__(self, img_size=16, patch_size=4, num_classes=4, embed_dim=32, depth=2, num_heads=2):
        super().__init__()
        self.global_pool = "token"
        self.num_prefix_tokens = 1
        self.patch_embed = PatchEmbed(img_size, patch_size, 3, embed_dim)
        num_patches = self.patch_embed.num_patches
        self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim))
        self.pos_embed = nn.Parameter(torch.randn(1, num_patches + self.num_prefix_tokens, embed_dim) * 0.02)
        self.pos_drop = nn.Dropout(p=0.0)
        self.blocks = nn.Sequential(*[Block(embed_dim, num_heads) for _ in range(depth)])
        self.norm = nn.LayerNorm(embed_dim, eps=1e-6)
        self.fc_norm = nn.Identity()
        self.head_drop = nn.Dropout(0.0)
        self.head = nn.Linear(embed_dim, num_classes)
        self.init_weights()

    def init_weights(self):
        nn.init.trunc_normal_(self.pos_embed, std=0.02)
        nn.init.normal_(self.cls_token, std=1e-6)
        self.apply(_init_weights)

    @torch.jit.ignore
    def no_weight_decay(self):
        return {"pos_embed", "cls_token", "dist_token"}

    def _pos_embed(self, x):
        x = torch.cat((self.cls_token.expand(x.shape[0], -1, -1), x), dim=1)
        x = x + self.pos_embed
        return self.pos_drop(x)

    def forward_features(self, x):
        x = self.patch_embed(x)
        x = self._pos_embed(x)
        x = self.blocks(x)
        return self.norm(x)

    def forward_head(self, x):
        x = x[:, 0] if self.global_pool == "token" else x[:, self.num_prefix_tokens:].mean(dim=1)
        x = self.fc_norm(x)
        x = self.head_drop(x)
        return self.head(x)

    def forward(self, x):
        return self.forward_head(self.forward_features(x))


def _init_weights(m):
    if isinstance(m, nn.Linear):
        nn.init.trunc_normal_(m.weight, std=0.02)
        if m.bias is not None:
            nn.init.zeros_(m.bias)


# ---- timm/utils/model_ema.py (stand-in) ----
class ModelEmaV2(nn.Module):
    def __init__(self, model, decay=0.9999, device=None):
        super().__init__()
        # make a copy of the model for accumulating moving average of weights
        self.module = copy.deepcopy(model)
        self.module.eval()
        self.decay = decay
        self.device = device

    def _update(self, model, update_fn):
        with torch.no_grad():
            for ema_v, model_v in zip(self.module.state_dict().values(), model.state_dict().values()):
                if self.device is not None:
                    model_v = model_v.to(device=self.device)
                ema_v.copy_(update_fn(ema_v, model_v))

    def update(self, model):
        self._update(model, update_fn=lambda e, m: self.decay * e + (1. - self.decay) * m)

    def set(self, model):
        self._update(model, update_fn=lambda e, m: m)

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)


# ---- timm/optim/_param_groups.py (stand-in) ----
def param_groups_weight_decay(model, weight_decay=1e-5, no_weight_decay_list=()):
    no_weight_decay_list = set(no_weight_decay_list)
    decay = []
    no_decay = []
    for name, param in model.named_parameters():
        if not param.requires_grad:
            continue
        if param.ndim <= 1 or name.endswith(".bias") or name in no_weight_decay_list:
            no_decay.append(param)
        else:
            decay.append(param)
    return [{"params": no_decay, "weight_decay": 0.}, {"params": decay, "weight_decay": weight_decay}]


# ---- timm/scheduler/cosine_lr.py (stand-in, t_in_epochs=False) ----
class CosineLRScheduler:
    def __init__(self, optimizer, t_initial, lr_min=1e-5, warmup_t=0, warmup_lr_init=0.):
        self.optimizer = optimizer
        self.base_values = [group["lr"] for group in optimizer.param_groups]
        for group in optimizer.param_groups:
            group.setdefault("initial_lr", group["lr"])
        self.t_initial = t_initial
        self.lr_min = lr_min
        self.warmup_t = warmup_t
        self.warmup_lr_init = warmup_lr_init
        if self.warmup_t:
            self.warmup_steps = [(v - warmup_lr_init) / self.warmup_t for v in self.base_values]
            self.update_groups(self.warmup_lr_init)
        else:
            self.warmup_steps = [1 for _ in self.base_values]

    def _get_lr(self, t):
        if t < self.warmup_t:
            return [self.warmup_lr_init + t * s for s in self.warmup_steps]
        t = t - self.warmup_t
        return [self.lr_min + 0.5 * (lr_max - self.lr_min) * (1 + math.cos(math.pi * t / self.t_initial))
                for lr_max in self.base_values]

    def step_update(self, num_updates, metric=None):
        self.update_groups(self._get_lr(num_updates))

    def update_groups(self, values):
        if not isinstance(values, (list, tuple)):
            values = [values] * len(self.optimizer.param_groups)
        for param_group, value in zip(self.optimizer.param_groups, values):
            param_group["lr"] = value


# ---- timm/loss/cross_entropy.py (stand-in) ----
class LabelSmoothingCrossEntropy(nn.Module):
    def __init__(self, smoothing=0.1):
        super().__init__()
        self.smoothing = smoothing
        self.confidence = 1. - smoothing

    def forward(self, x, target):
        logprobs = F.log_softmax(x, dim=-1)
        nll_loss = -logprobs.gather(dim=-1, index=target.unsqueeze(1)).squeeze(1)
        smooth_loss = -logprobs.mean(dim=-1)
        loss = self.confidence * nll_loss + self.smoothing * smooth_loss
        return loss.mean()


class AverageMeter:
    def __init__(self):
        self.val = self.avg = self.sum = self.count = 0

    def update(self, val, n=1):
        self.val = val
        self.sum += val * n
        self.count += n
        self.avg = self.sum / self.count


@torch.no_grad()
def validate(model, images, labels, loss_fn):
    model.eval()
    output = model(images)
    loss = loss_fn(output, labels)
    acc1 = (output.argmax(dim=-1) == labels).float().mean() * 100.
    return {"loss": loss.item(), "top1": acc1.item()}


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    num_classes = 4
    prototypes = torch.randn(num_classes, 3, 16, 16)
    train_labels = torch.randint(0, num_classes, (48,))
    train_images = prototypes[train_labels] + 0.5 * torch.randn(48, 3, 16, 16)
    val_labels = torch.randint(0, num_classes, (16,))
    val_images = prototypes[val_labels] + 0.5 * torch.randn(16, 3, 16, 16)

    model = VisionTransformer(num_classes=num_classes)
    # timm train.py: model_ema created after the model is moved to device, before any DDP wrapper
    model_ema = ModelEmaV2(model, decay=0.99)
    optimizer = torch.optim.AdamW(
        param_groups_weight_decay(model, weight_decay=0.05, no_weight_decay_list=model.no_weight_decay()),
        lr=1e-3, betas=(0.9, 0.999), eps=1e-8)
    lr_scheduler = CosineLRScheduler(optimizer, t_initial=6, lr_min=1e-5, warmup_t=2, warmup_lr_init=1e-4)
    train_loss_fn = LabelSmoothingCrossEntropy(smoothing=0.1)
    validate_loss_fn = nn.CrossEntropyLoss()
    clip_grad = 1.0

    num_updates = 0
    losses_m = AverageMeter()
    batch_size = 16
    step = 0
    for epoch in range(2):
        model.train()
        perm = torch.randperm(train_images.shape[0])
        for batch_idx in range(train_images.shape[0] // batch_size):
            idx = perm[batch_idx * batch_size:(batch_idx + 1) * batch_size]
            input, target = train_images[idx], train_labels[idx]
            output = model(input)
            loss = train_loss_fn(output, target)
            loss.backward()
            if clip_grad is not None:
                torch.nn.utils.clip_grad_norm_(model.parameters(), clip_grad)
            optimizer.step()
            losses_m.update(loss.item(), input.size(0))

            num_updates += 1
            optimizer.zero_grad()
            if model_ema is not None:
                model_ema.update(model)
            lr_scheduler.step_update(num_updates=num_updates, metric=losses_m.avg)
            print(f"step {step} loss {loss.item():.6f}")
            step += 1

        eval_metrics = validate(model, val_images, val_labels, validate_loss_fn)
        ema_eval_metrics = validate(model_ema.module, val_images, val_labels, validate_loss_fn)
        print(f"epoch {epoch} val {eval_metrics['loss']:.4f} ema val {ema_eval_metrics['loss']:.4f}")

    if os.environ.get("REALWORLD_STATE"):
        torch.save({"model": model.state_dict(), "model_ema": model_ema.state_dict()},
                   os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
