"""A timm VisionTransformer fine-tuned with its cls_token and pos_embed frozen on purpose
(requires_grad_(False) on the model built inside main()), the optimizer taking only what still
requires grad, gradient clipping, and a validation pass under no_grad."""
import os

import torch
import torch.nn.functional as F
from timm.models.vision_transformer import VisionTransformer


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = VisionTransformer(img_size=32, patch_size=8, num_classes=10, embed_dim=32, depth=2,
                              num_heads=2, mlp_ratio=2.0)
    model.cls_token.requires_grad_(False)
    model.pos_embed.requires_grad_(False)
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=1e-3)
    print(f"trainable {sum(p.numel() for p in params)} of {sum(p.numel() for p in model.parameters())}")
    data = [(torch.randn(4, 3, 32, 32), torch.randint(0, 10, (4,))) for _ in range(3)]
    for step, (x, y) in enumerate(data):
        model.train()
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        optimizer.step()
        model.eval()
        with torch.no_grad():
            val = F.cross_entropy(model(data[0][0]), data[0][1])
        print(f"step {step} loss {loss.item():.6f} val {val.item():.6f}")
    if os.environ.get("REALWORLD_STATE"):
        torch.save(model.state_dict(), os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
