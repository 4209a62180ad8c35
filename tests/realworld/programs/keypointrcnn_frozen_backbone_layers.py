"""Keypoint R-CNN fine-tuning the torchvision way: ResNet-FPN backbone with FrozenBatchNorm2d and the stem +
layer1 frozen (trainable_layers=3), loss dict summed, reduced copy logged, warmup LinearLR per iteration,
inference-mode evaluation returning boxes and keypoints.

Source: https://github.com/pytorch/vision/tree/main/references/detection (train.py, engine.py
train_one_epoch / evaluate, utils.reduce_dict) and torchvision/models/detection/keypoint_rcnn.py
(keypointrcnn_resnet50_fpn builds exactly this backbone when a pretrained backbone is used; here a small
ResNet-18 with random weights stands in for the pretrained one, and the heads are narrowed to keep it fast).

Patterns kept (all right):
- `resnet_fpn_backbone(..., trainable_layers=3)` sets `requires_grad_(False)` on conv1 and layer1 (their
  pretrained low-level filters are kept fixed), and `FrozenBatchNorm2d` holds its statistics as buffers.
- `params = [p for p in model.parameters() if p.requires_grad]` gives SGD exactly the trainable part.
- Inside the model the RPN decodes proposals from `pred_bbox_deltas.detach()` and the RoI heads sample
  and match proposals under `no_grad`: proposals are treated as constants in Faster R-CNN training.
- `losses = sum(loss for loss in loss_dict.values())` is backpropagated, while `reduce_dict` (a
  `torch.no_grad()` all-reduce, the identity on one process) produces the logged `loss_value = .item()`,
  checked with `math.isfinite`.
- `warmup_lr_scheduler` (LinearLR with start_factor 1/1000) steps every iteration.
- `evaluate` switches to `model.eval()` under `torch.inference_mode()`.
"""
import math
import os
import sys

import torch
from torchvision.models.detection import KeypointRCNN
from torchvision.models.detection.backbone_utils import resnet_fpn_backbone
from torchvision.models.detection.faster_rcnn import FastRCNNPredictor, TwoMLPHead
from torchvision.models.detection.keypoint_rcnn import KeypointRCNNHeads, KeypointRCNNPredictor
from torchvision.ops.misc import FrozenBatchNorm2d


def reduce_dict(input_dict, average=True):
    world_size = 1
    if world_size < 2:
        return input_dict
    with torch.no_grad():
        names = sorted(input_dict.keys())
        values = torch.stack([input_dict[k] for k in names])
        torch.distributed.all_reduce(values)
        if average:
            values /= world_size
        return {k: v for k, v in zip(names, values)}


def make_image(num_keypoints, size=96):
    img = 0.1 * torch.rand(3, size, size)
    n = int(torch.randint(1, 3, ()))
    boxes, kps = [], []
    for _ in range(n):
        x0, y0 = torch.randint(0, size // 2, (2,)).tolist()
        w, h = torch.randint(24, size // 2, (2,)).tolist()
        img[:, y0:y0 + h, x0:x0 + w] += 0.8
        boxes.append([x0, y0, x0 + w, y0 + h])
        pts = torch.stack([x0 + torch.rand(num_keypoints) * w, y0 + torch.rand(num_keypoints) * h,
                           torch.full((num_keypoints,), 2.0)], 1)
        for x, y, _ in pts.tolist():
            img[0, int(y), int(x)] = 1.0
        kps.append(pts)
    target = {"boxes": torch.tensor(boxes, dtype=torch.float32), "labels": torch.ones(n, dtype=torch.int64),
              "keypoints": torch.stack(kps)}
    return img.clamp(0, 1), target


def train_one_epoch(model, optimizer, data, epoch):
    model.train()
    warmup_factor = 1.0 / 1000
    warmup_iters = min(1000, len(data) - 1)
    lr_scheduler = torch.optim.lr_scheduler.LinearLR(optimizer, start_factor=warmup_factor, total_iters=warmup_iters)
    for images, targets in data:
        loss_dict = model(images, targets)
        losses = sum(loss for loss in loss_dict.values())
        loss_dict_reduced = reduce_dict(loss_dict)
        losses_reduced = sum(loss for loss in loss_dict_reduced.values())
        loss_value = losses_reduced.item()
        if not math.isfinite(loss_value):
            print(f"Loss is {loss_value}, stopping training")
            print(loss_dict_reduced)
            sys.exit(1)
        optimizer.zero_grad()
        losses.backward()
        optimizer.step()
        lr_scheduler.step()
        print(f"epoch {epoch} loss {loss_value:.4f} " + " ".join(f"{k} {v.item():.3f}" for k, v in loss_dict_reduced.items()))


def evaluate(model, images):
    model.eval()
    with torch.inference_mode():
        outputs = model(images)
        outputs = [{k: v.to("cpu") for k, v in t.items()} for t in outputs]
    return outputs


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    num_keypoints, num_classes = 4, 2
    backbone = resnet_fpn_backbone(backbone_name="resnet18", weights=None, norm_layer=FrozenBatchNorm2d,
                                   trainable_layers=3)
    out_channels = backbone.out_channels
    model = KeypointRCNN(
        backbone, num_classes=None, min_size=96, max_size=96,
        rpn_pre_nms_top_n_train=200, rpn_post_nms_top_n_train=100, rpn_batch_size_per_image=64,
        box_batch_size_per_image=32,
        box_head=TwoMLPHead(out_channels * 7 * 7, 64), box_predictor=FastRCNNPredictor(64, num_classes),
        keypoint_head=KeypointRCNNHeads(out_channels, (32, 32)),
        keypoint_predictor=KeypointRCNNPredictor(32, num_keypoints))
    params = [p for p in model.parameters() if p.requires_grad]
    print(f"trainable tensors {len(params)} of {len(list(model.parameters()))}")
    optimizer = torch.optim.SGD(params, lr=0.005, momentum=0.9, weight_decay=1e-4)
    data = []
    for _ in range(3):
        samples = [make_image(num_keypoints) for _ in range(2)]
        data.append(([s[0] for s in samples], [s[1] for s in samples]))
    train_one_epoch(model, optimizer, data, epoch=0)
    outputs = evaluate(model, data[0][0])
    print("detections", [len(o["boxes"]) for o in outputs], "keypoints shape", tuple(outputs[0]["keypoints"].shape))
    if os.environ.get("REALWORLD_STATE"):
        torch.save({"model": model.state_dict()}, os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
