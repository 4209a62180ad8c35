"""torchvision's VisionTransformer from a tiny config, fine-tuned with the class token and the
positional embedding frozen in main() (requires_grad_(False)) and the head replaced before the
optimizer is built; label smoothing and a cosine schedule as in torchvision's classification reference."""
import os

import torch
import torch.nn as nn
from torchvision.models import VisionTransformer


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2, hidden_dim=32,
                              mlp_dim=64, num_classes=1000)
    model.heads.head = nn.Linear(32, 4)
    model.class_token.requires_grad_(False)
    model.encoder.pos_embedding.requires_grad_(False)
    parameters = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(parameters, lr=1e-3, weight_decay=0.05)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=3)
    criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
    for step in range(3):
        image, target = torch.randn(4, 3, 32, 32), torch.randint(0, 4, (4,))
        output = model(image)
        loss = criterion(output, target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
        print(f"step {step} loss {loss.item():.6f}")
    if os.environ.get("REALWORLD_STATE"):
        torch.save(model.state_dict(), os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
