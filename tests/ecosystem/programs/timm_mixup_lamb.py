"""timm's training recipe pieces: Mixup/CutMix with SoftTargetCrossEntropy, the LAMB optimizer from
timm.optim (its step is timm's own code), create_model for a small MobileNetV3, and the
features/forward_head split used for fine-tuning."""
import os

import timm
import torch
from timm.data import Mixup
from timm.loss import SoftTargetCrossEntropy
from timm.optim import create_optimizer_v2
from timm.utils import random_seed


def main():
    random_seed(0)  # seeds random, numpy (Mixup draws from it) and torch, as timm's train.py does
    torch.set_num_threads(1)
    model = timm.create_model("mobilenetv3_small_050", num_classes=4, pretrained=False, drop_rate=0.1)
    optimizer = create_optimizer_v2(model, opt="lamb", lr=2e-3, weight_decay=0.02)
    mixup_fn = Mixup(mixup_alpha=0.8, cutmix_alpha=1.0, label_smoothing=0.1, num_classes=4)
    loss_fn = SoftTargetCrossEntropy()
    data = [(torch.randn(4, 3, 32, 32), torch.randint(0, 4, (4,))) for _ in range(3)]
    model.train()
    for step, (x, y) in enumerate(data):
        x, y = mixup_fn(x, y)
        features = model.forward_features(x)
        output = model.forward_head(features)
        loss = loss_fn(output, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"step {step} loss {loss.item():.6f} features {tuple(features.shape)}")
    if os.environ.get("REALWORLD_STATE"):
        torch.save(model.state_dict(), os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
