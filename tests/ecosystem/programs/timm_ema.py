"""timm's train.py loop in miniature: create_model from a tiny config, create_optimizer_v2, a cosine
scheduler stepped per update, label smoothing, ModelEmaV3 updated after each step (it lerps the
EMA copy's state_dict() views with torch._foreach_lerp_), and the EMA model evaluated under no_grad."""
import os

import timm
import torch
from timm.loss import LabelSmoothingCrossEntropy
from timm.optim import create_optimizer_v2
from timm.scheduler import CosineLRScheduler
from timm.utils import ModelEmaV3


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = timm.create_model("resnet10t", num_classes=5, pretrained=False)
    optimizer = create_optimizer_v2(model, opt="adamw", lr=1e-3, weight_decay=0.05)
    scheduler = CosineLRScheduler(optimizer, t_initial=4, warmup_t=1, warmup_lr_init=1e-4)
    model_ema = ModelEmaV3(model, decay=0.9)
    train_loss_fn = LabelSmoothingCrossEntropy(smoothing=0.1)
    data = [(torch.randn(4, 3, 32, 32), torch.randint(0, 5, (4,))) for _ in range(3)]
    num_updates = 0
    model.train()
    for x, y in data:
        output = model(x)
        loss = train_loss_fn(output, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        model_ema.update(model, step=num_updates)
        num_updates += 1
        scheduler.step_update(num_updates=num_updates)
        print(f"step {num_updates} loss {loss.item():.6f} lr {optimizer.param_groups[0]['lr']:.6f}")
    model_ema.eval()
    with torch.no_grad():
        acc = (model_ema(data[0][0]).argmax(-1) == data[0][1]).float().mean()
    print(f"ema accuracy {acc.item():.3f}")
    if os.environ.get("REALWORLD_STATE"):
        torch.save({"model": model.state_dict(), "ema": model_ema.module.state_dict()}, os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
