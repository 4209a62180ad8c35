"""Twin of programs/tv_fasterrcnn.py with one cut: the box predictor is replaced (as
the detection fine-tuning tutorial does) after the optimizer was built, so the new head is in no optimizer."""
import os

import torch
from torchvision.models.detection import fasterrcnn_mobilenet_v3_large_320_fpn
from torchvision.models.detection.faster_rcnn import FastRCNNPredictor


def random_targets(n, size, num_classes):
    xy = torch.rand(n, 2) * (size / 2)
    wh = torch.rand(n, 2) * (size / 3) + 8
    return {"boxes": torch.cat([xy, xy + wh], dim=1), "labels": torch.randint(1, num_classes, (n,))}


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = fasterrcnn_mobilenet_v3_large_320_fpn(weights=None, weights_backbone=None, num_classes=3,
                                                  min_size=96, max_size=96, rpn_pre_nms_top_n_train=100,
                                                  rpn_post_nms_top_n_train=50, box_batch_size_per_image=32)
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.SGD(params, lr=0.005, momentum=0.9, weight_decay=0.0005)  # <- optimizer
    in_features = model.roi_heads.box_predictor.cls_score.in_features
    model.roi_heads.box_predictor = FastRCNNPredictor(in_features, 3)
    model.train()
    for step in range(2):
        images = [torch.rand(3, 96, 96) for _ in range(2)]
        targets = [random_targets(2, 96, 3) for _ in range(2)]
        loss_dict = model(images, targets)
        losses = sum(loss for loss in loss_dict.values())
        optimizer.zero_grad()
        losses.backward()
        optimizer.step()
        print(f"step {step} loss {losses.item():.6f} " + " ".join(f"{k} {v.item():.4f}" for k, v in sorted(loss_dict.items())))
    model.eval()
    with torch.no_grad():
        detections = model([torch.rand(3, 96, 96)])
    print("detections", detections[0]["boxes"].shape[0] >= 0)
    if os.environ.get("REALWORLD_STATE"):
        torch.save(model.state_dict(), os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
