"""torchvision's RetinaNet (focal loss, anchor matching) built with weights=None, weights_backbone=None
and a ResNet-18 FPN backbone from resnet_fpn_backbone(trainable_layers=3, which freezes the stem and
layer1 with requires_grad_(False) and uses FrozenBatchNorm2d), trained a few steps on tiny images."""
import os

import torch
from torchvision.models.detection import RetinaNet
from torchvision.models.detection.backbone_utils import resnet_fpn_backbone
from torchvision.ops.feature_pyramid_network import LastLevelP6P7


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    backbone = resnet_fpn_backbone(backbone_name="resnet18", weights=None, trainable_layers=3,
                                   returned_layers=[2, 3, 4], extra_blocks=LastLevelP6P7(256, 256))
    model = RetinaNet(backbone, num_classes=3, min_size=64, max_size=64)
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.SGD(params, lr=0.01, momentum=0.9)
    model.train()
    for step in range(2):
        images = [torch.rand(3, 64, 64) for _ in range(2)]
        targets = [{"boxes": torch.tensor([[4.0, 6.0, 40.0, 50.0]]), "labels": torch.tensor([1 + step])} for _ in range(2)]
        loss_dict = model(images, targets)
        losses = sum(loss for loss in loss_dict.values())
        optimizer.zero_grad()
        losses.backward()
        optimizer.step()
        print(f"step {step} " + " ".join(f"{k} {v.item():.4f}" for k, v in sorted(loss_dict.items())))
    if os.environ.get("REALWORLD_STATE"):
        torch.save(model.state_dict(), os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
