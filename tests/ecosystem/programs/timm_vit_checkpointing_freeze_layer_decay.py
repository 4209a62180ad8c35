"""timm ViT fine-tuning the way timm's ``train.py`` does it with ``--grad-checkpointing``, ``--drop-path``
and ``--layer-decay`` (https://huggingface.co/docs/timm/training_script and
https://huggingface.co/docs/timm/reference/optimizers), plus the ``timm.utils.model.freeze`` helper
(https://github.com/huggingface/pytorch-image-models/blob/main/timm/utils/model.py, "freeze" docstring).

Patterns kept:
- a tiny ViT from ``create_model`` kwargs (random init) with ``drop_path_rate``: stochastic depth zeroes
  whole residual branches for some samples, the branch parameters still get gradient from the others;
- ``model.set_grad_checkpointing(True)``: the blocks run under ``torch.utils.checkpoint`` (non-reentrant,
  timm's default), so activations are recomputed in backward;
- ``freeze(model, ["patch_embed", "blocks.0"])`` freezes the patch embedding and the first block on purpose,
  while ``cls_token`` / ``pos_embed`` (root parameters, not submodules) stay trainable;
- ``create_optimizer_v2(..., layer_decay=0.75)`` builds one param group per (layer, decay/no-decay) and
  skips the frozen parameters;
- timm's ``BinaryCrossEntropy`` with label smoothing on integer targets.
"""
import os

import timm
import torch
from timm.loss import BinaryCrossEntropy
from timm.optim import create_optimizer_v2
from timm.utils.model import freeze


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = timm.create_model(
        "vit_tiny_patch16_224",
        pretrained=False,
        num_classes=5,
        img_size=32,
        patch_size=8,
        embed_dim=48,
        depth=3,
        num_heads=3,
        drop_path_rate=0.1,
    )
    freeze(model, ["patch_embed", "blocks.0"])
    model.set_grad_checkpointing(True)
    optimizer = create_optimizer_v2(model, opt="adamw", lr=1e-3, weight_decay=0.05, layer_decay=0.75)
    loss_fn = BinaryCrossEntropy(smoothing=0.1)

    data = [(torch.randn(4, 3, 32, 32), torch.randint(0, 5, (4,))) for _ in range(3)]
    model.train()
    for step, (x, y) in enumerate(data):
        loss = loss_fn(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"step {step} loss {loss.item():.6f} groups {len(optimizer.param_groups)}")

    if os.environ.get("REALWORLD_STATE"):
        trainable = {n: p.detach().clone() for n, p in model.named_parameters() if p.requires_grad}
        torch.save(trainable, os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
