"""Mask R-CNN training in the shape of torchvision's detection reference
(https://github.com/pytorch/vision/blob/main/references/detection/engine.py `train_one_epoch` / `evaluate`, and
references/detection/train.py: `params = [p for p in model.parameters() if p.requires_grad]`, SGD, MultiStepLR),
with torchvision's model code written as small stand-ins shaped like the library:
torchvision/ops/misc.py FrozenBatchNorm2d, torchvision/models/detection/backbone_utils.py `_resnet_fpn_extractor`
(trainable_backbone_layers=3: conv1 and layer1 frozen), ops/feature_pyramid_network.py (FPN + LastLevelMaxPool),
detection/rpn.py (RPNHead, RegionProposalNetwork), detection/roi_heads.py (fastrcnn_loss, maskrcnn_loss),
ops/poolers.py (MultiScaleRoIAlign with its LevelMapper), detection/mask_rcnn.py (MaskRCNNHeads / Predictor).
Tiny ResNet widths, 64x64 random images with 1-2 rectangles of class 1 or 2 each (boxes + masks).

Suspicious-but-correct patterns kept:
  - every BatchNorm of the backbone is a FrozenBatchNorm2d: weight/bias/running_mean/running_var are *buffers*
    (register_buffer), so the backbone's normalisation never learns by design; the "ImageNet" weights come from a
    plain-BatchNorm ResNet's state_dict loaded with `load_state_dict`, FrozenBatchNorm2d's `_load_from_state_dict`
    deleting the `num_batches_tracked` key;
  - `parameter.requires_grad_(False)` for every backbone parameter outside layer2/3/4 (the stem conv1 and layer1),
    and the optimizer only gets `[p for p in model.parameters() if p.requires_grad]`;
  - the RPN decodes proposals from `pred_bbox_deltas.detach()` and ranks them with `objectness.detach()`; the
    proposals (plus the gt boxes appended to them) are constants for the RoI heads; anchors, matched gt boxes,
    regression targets and mask targets (gt masks roi-aligned onto proposals) carry no gradient;
  - the model returns a dict of losses and the step uses `losses = sum(loss for loss in loss_dict.values())`;
    a "reduced" copy (`reduce_dict`, a no-op on one process) is summed again and logged with `.item()`, with a
    `math.isfinite` check;
  - class-specific box regression / mask logits: only the rows of the gt classes are indexed into the losses;
  - LinearLR warmup (start_factor 1/1000) built inside the first epoch and stepped per iteration, MultiStepLR per
    epoch; evaluation under `@torch.inference_mode()` in eval mode.
"""
import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F


# ---- torchvision/ops/misc.py (stand-in) ----
class FrozenBatchNorm2d(nn.Module):
    """BatchNorm2d where the batch statistics and the affine parameters are fixed."""

    def __init__(self, num_features, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.register_buffer("weight", torch.ones(num_features))
        self.register_buffer("bias", torch.zeros(num_features))
        self.register_buffer("running_mean", torch.zeros(num_features))
        self.register_buffer("running_var", torch.ones(num_features))

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs):
        num_batches_tracked_key = prefix + "num_batches_tracked"
        if num_batches_tracked_key in state_dict:
            del state_dict[num_batches_tracked_key]
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)

    def forward(self, x):
        # move reshapes to the beginning to make it fuser-friendly
        w = self.weight.reshape(1, -1, 1, 1)
        b = self.bias.reshape(1, -1, 1, 1)
        rv = self.running_var.reshape(1, -1, 1, 1)
        rm = self.running_mean.reshape(1, -1, 1, 1)
        scale = w * (rv + self.eps).rsqrt()
        bias = b - rm * scale
        return x * scale + bias


# ---- torchvision/models/resnet.py (stand-in, BasicBlock, tiny widths) ----
class BasicBlock(nn.Module):
    def __init__(self, inplanes, planes, stride, norm_layer):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
        self.bn1 = norm_layer(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = norm_layer(planes)
        self.downsample = None
        if stride != 1 or inplanes != planes:
            self.downsample = nn.Sequential(nn.Conv2d(inplanes, planes, 1, stride, bias=False), norm_layer(planes))

    def forward(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        return self.relu(out)


class ResNet(nn.Module):
    def __init__(self, widths=(8, 16, 16, 32), norm_layer=None):
        super().__init__()
        norm_layer = norm_layer or nn.BatchNorm2d
        self.conv1 = nn.Conv2d(3, widths[0], kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = norm_layer(widths[0])
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = BasicBlock(widths[0], widths[0], 1, norm_layer)
        self.layer2 = BasicBlock(widths[0], widths[1], 2, norm_layer)
        self.layer3 = BasicBlock(widths[1], widths[2], 2, norm_layer)
        self.layer4 = BasicBlock(widths[2], widths[3], 2, norm_layer)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(widths[3], 10)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


# ---- torchvision/models/_utils.py + ops/feature_pyramid_network.py + backbone_utils.py (stand-ins) ----
class IntermediateLayerGetter(nn.ModuleDict):
    def __init__(self, model, return_layers):
        orig_return_layers = dict(return_layers)
        layers = {}
        for name, module in model.named_children():
            layers[name] = module
            if name in return_layers:
                del return_layers[name]
            if not return_layers:
                break
        super().__init__(layers)
        self.return_layers = orig_return_layers

    def forward(self, x):
        out = {}
        for name, module in self.items():
            x = module(x)
            if name in self.return_layers:
                out[self.return_layers[name]] = x
        return out


class FeaturePyramidNetwork(nn.Module):
    def __init__(self, in_channels_list, out_channels):
        super().__init__()
        self.inner_blocks = nn.ModuleList([nn.Conv2d(c, out_channels, 1) for c in in_channels_list])
        self.layer_blocks = nn.ModuleList([nn.Conv2d(out_channels, out_channels, 3, padding=1)
                                           for _ in in_channels_list])
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_uniform_(m.weight, a=1)
                nn.init.constant_(m.bias, 0)

    def forward(self, x):
        names = list(x.keys())
        x = list(x.values())
        last_inner = self.inner_blocks[-1](x[-1])
        results = [self.layer_blocks[-1](last_inner)]
        for idx in range(len(x) - 2, -1, -1):
            inner_lateral = self.inner_blocks[idx](x[idx])
            inner_top_down = F.interpolate(last_inner, size=inner_lateral.shape[-2:], mode="nearest")
            last_inner = inner_lateral + inner_top_down
            results.insert(0, self.layer_blocks[idx](last_inner))
        # LastLevelMaxPool
        names.append("pool")
        results.append(F.max_pool2d(results[-1], 1, 2, 0))
        return {k: v for k, v in zip(names, results)}


class BackboneWithFPN(nn.Module):
    def __init__(self, backbone, return_layers, in_channels_list, out_channels):
        super().__init__()
        self.body = IntermediateLayerGetter(backbone, return_layers=return_layers)
        self.fpn = FeaturePyramidNetwork(in_channels_list, out_channels)
        self.out_channels = out_channels

    def forward(self, x):
        return self.fpn(self.body(x))


def _resnet_fpn_extractor(backbone, trainable_layers, out_channels=16):
    # select layers that won't be frozen
    layers_to_train = ["layer4", "layer3", "layer2", "layer1", "conv1"][:trainable_layers]
    if trainable_layers == 5:
        layers_to_train.append("bn1")
    for name, parameter in backbone.named_parameters():
        if all([not name.startswith(layer) for layer in layers_to_train]):
            parameter.requires_grad_(False)
    return_layers = {f"layer{k}": str(v) for v, k in enumerate([1, 2, 3, 4])}
    in_channels_list = [backbone.layer1.conv2.out_channels, backbone.layer2.conv2.out_channels,
                        backbone.layer3.conv2.out_channels, backbone.layer4.conv2.out_channels]
    return BackboneWithFPN(backbone, return_layers, in_channels_list, out_channels)


# ---- torchvision/ops/boxes.py + models/detection/_utils.py (stand-ins) ----
def box_area(boxes):
    return (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])


def box_iou(boxes1, boxes2):
    area1, area2 = box_area(boxes1), box_area(boxes2)
    lt = torch.max(boxes1[:, None, :2], boxes2[:, :2])
    rb = torch.min(boxes1[:, None, 2:], boxes2[:, 2:])
    wh = (rb - lt).clamp(min=0)
    inter = wh[:, :, 0] * wh[:, :, 1]
    return inter / (area1[:, None] + area2 - inter)


def nms(boxes, scores, iou_threshold):
    order = scores.argsort(descending=True)
    keep = []
    while order.numel() > 0:
        i = order[0]
        keep.append(i)
        if order.numel() == 1:
            break
        ious = box_iou(boxes[i][None], boxes[order[1:]])[0]
        order = order[1:][ious <= iou_threshold]
    return torch.stack(keep) if keep else torch.zeros(0, dtype=torch.int64)


class BoxCoder:
    def __init__(self, weights, bbox_xform_clip=math.log(1000.0 / 16)):
        self.weights = weights
        self.bbox_xform_clip = bbox_xform_clip

    def encode(self, reference_boxes, proposals):
        wx, wy, ww, wh = self.weights
        ex_widths = proposals[:, 2] - proposals[:, 0]
        ex_heights = proposals[:, 3] - proposals[:, 1]
        ex_ctr_x = proposals[:, 0] + 0.5 * ex_widths
        ex_ctr_y = proposals[:, 1] + 0.5 * ex_heights
        gt_widths = reference_boxes[:, 2] - reference_boxes[:, 0]
        gt_heights = reference_boxes[:, 3] - reference_boxes[:, 1]
        gt_ctr_x = reference_boxes[:, 0] + 0.5 * gt_widths
        gt_ctr_y = reference_boxes[:, 1] + 0.5 * gt_heights
        return torch.stack((wx * (gt_ctr_x - ex_ctr_x) / ex_widths, wy * (gt_ctr_y - ex_ctr_y) / ex_heights,
                            ww * torch.log(gt_widths / ex_widths), wh * torch.log(gt_heights / ex_heights)), dim=1)

    def decode(self, rel_codes, boxes):
        wx, wy, ww, wh = self.weights
        widths = boxes[:, 2] - boxes[:, 0]
        heights = boxes[:, 3] - boxes[:, 1]
        ctr_x = boxes[:, 0] + 0.5 * widths
        ctr_y = boxes[:, 1] + 0.5 * heights
        rel_codes = rel_codes.reshape(boxes.shape[0], -1)
        dx, dy = rel_codes[:, 0::4] / wx, rel_codes[:, 1::4] / wy
        dw = torch.clamp(rel_codes[:, 2::4] / ww, max=self.bbox_xform_clip)
        dh = torch.clamp(rel_codes[:, 3::4] / wh, max=self.bbox_xform_clip)
        pred_ctr_x = dx * widths[:, None] + ctr_x[:, None]
        pred_ctr_y = dy * heights[:, None] + ctr_y[:, None]
        pred_w = torch.exp(dw) * widths[:, None]
        pred_h = torch.exp(dh) * heights[:, None]
        return torch.stack((pred_ctr_x - 0.5 * pred_w, pred_ctr_y - 0.5 * pred_h,
                            pred_ctr_x + 0.5 * pred_w, pred_ctr_y + 0.5 * pred_h), dim=2).flatten(1)


class Matcher:
    BELOW_LOW_THRESHOLD, BETWEEN_THRESHOLDS = -1, -2

    def __init__(self, high_threshold, low_threshold, allow_low_quality_matches=False):
        self.high_threshold = high_threshold
        self.low_threshold = low_threshold
        self.allow_low_quality_matches = allow_low_quality_matches

    def __call__(self, match_quality_matrix):
        matched_vals, matches = match_quality_matrix.max(dim=0)
        all_matches = matches.clone() if self.allow_low_quality_matches else None
        below_low_threshold = matched_vals < self.low_threshold
        between_thresholds = (matched_vals >= self.low_threshold) & (matched_vals < self.high_threshold)
        matches[below_low_threshold] = self.BELOW_LOW_THRESHOLD
        matches[between_thresholds] = self.BETWEEN_THRESHOLDS
        if self.allow_low_quality_matches:
            highest_quality_foreach_gt, _ = match_quality_matrix.max(dim=1)
            gt_pred_pairs_of_highest_quality = torch.where(match_quality_matrix == highest_quality_foreach_gt[:, None])
            pred_inds_to_update = gt_pred_pairs_of_highest_quality[1]
            matches[pred_inds_to_update] = all_matches[pred_inds_to_update]
        return matches


class BalancedPositiveNegativeSampler:
    def __init__(self, batch_size_per_image, positive_fraction):
        self.batch_size_per_image = batch_size_per_image
        self.positive_fraction = positive_fraction

    def __call__(self, matched_idxs):
        pos_idx, neg_idx = [], []
        for matched_idxs_per_image in matched_idxs:
            positive = torch.where(matched_idxs_per_image >= 1)[0]
            negative = torch.where(matched_idxs_per_image == 0)[0]
            num_pos = min(positive.numel(), int(self.batch_size_per_image * self.positive_fraction))
            num_neg = min(negative.numel(), self.batch_size_per_image - num_pos)
            pos_idx_per_image = positive[torch.randperm(positive.numel())[:num_pos]]
            neg_idx_per_image = negative[torch.randperm(negative.numel())[:num_neg]]
            pos_mask = torch.zeros_like(matched_idxs_per_image, dtype=torch.uint8)
            neg_mask = torch.zeros_like(matched_idxs_per_image, dtype=torch.uint8)
            pos_mask[pos_idx_per_image] = 1
            neg_mask[neg_idx_per_image] = 1
            pos_idx.append(pos_mask)
            neg_idx.append(neg_mask)
        return pos_idx, neg_idx


# ---- torchvision/ops/roi_align.py + poolers.py (stand-ins; roi_align via grid_sample) ----
def roi_align(input, rois, output_size, spatial_scale, sampling_ratio=2):
    """rois: [K, 5] (batch_idx, x1, y1, x2, y2) in image coordinates."""
    if rois.numel() == 0:
        return input.new_zeros((0, input.shape[1], output_size, output_size))
    H, W = input.shape[-2:]
    out = []
    s = sampling_ratio
    steps = (torch.arange(output_size * s, dtype=input.dtype) + 0.5) / (output_size * s)
    for roi in rois:
        b = int(roi[0])
        x1, y1, x2, y2 = (roi[1:] * spatial_scale).unbind(0)
        xs = x1 + steps * (x2 - x1).clamp(min=1.0)
        ys = y1 + steps * (y2 - y1).clamp(min=1.0)
        gx = xs / W * 2 - 1
        gy = ys / H * 2 - 1
        grid = torch.stack(torch.meshgrid(gy, gx, indexing="ij")[::-1], dim=-1)[None]
        sampled = F.grid_sample(input[b:b + 1], grid, mode="bilinear", align_corners=False)
        out.append(F.avg_pool2d(sampled, s))
    return torch.cat(out, dim=0)


def convert_to_roi_format(boxes):
    concat_boxes = torch.cat(boxes, dim=0)
    ids = torch.cat([torch.full_like(b[:, :1], i) for i, b in enumerate(boxes)], dim=0)
    return torch.cat([ids, concat_boxes], dim=1)


class MultiScaleRoIAlign(nn.Module):
    def __init__(self, featmap_names, output_size, sampling_ratio, canonical_scale=224, canonical_level=4):
        super().__init__()
        self.featmap_names = featmap_names
        self.output_size = output_size
        self.sampling_ratio = sampling_ratio
        self.k0, self.s0 = canonical_level, canonical_scale

    def forward(self, x, boxes, image_shapes):
        x_filtered = [x[k] for k in self.featmap_names]
        scales = [2 ** round(math.log2(f.shape[-1] / image_shapes[0][1])) for f in x_filtered]
        lvl_min, lvl_max = -math.log2(scales[0]), -math.log2(scales[-1])
        rois = convert_to_roi_format(boxes)
        # LevelMapper (FPN paper eq. 1)
        s = torch.sqrt(box_area(rois[:, 1:]))
        target_lvls = torch.floor(self.k0 + torch.log2(s / self.s0) + 1e-6)
        levels = (torch.clamp(target_lvls, min=lvl_min, max=lvl_max) - lvl_min).to(torch.int64)
        result = x_filtered[0].new_zeros((rois.shape[0], x_filtered[0].shape[1], self.output_size,
                                          self.output_size))
        for level, (per_level_feature, scale) in enumerate(zip(x_filtered, scales)):
            idx_in_level = torch.where(levels == level)[0]
            if idx_in_level.numel() == 0:
                continue
            result_idx_in_level = roi_align(per_level_feature, rois[idx_in_level], self.output_size, scale,
                                            self.sampling_ratio)
            result = result.index_put((idx_in_level,), result_idx_in_level)
        return result


# ---- torchvision/models/detection/rpn.py (stand-in) ----
class AnchorGenerator(nn.Module):
    def __init__(self, sizes, aspect_ratios):
        super().__init__()
        self.sizes = sizes
        self.aspect_ratios = aspect_ratios

    def num_anchors_per_location(self):
        return [len(s) * len(a) for s, a in zip(self.sizes, self.aspect_ratios)]

    def forward(self, image_size, feature_maps):
        anchors = []
        for sizes, ratios, fmap in zip(self.sizes, self.aspect_ratios, feature_maps):
            scales = torch.as_tensor(sizes, dtype=torch.float32)
            ar = torch.as_tensor(ratios, dtype=torch.float32)
            h_ratios = torch.sqrt(ar)
            w_ratios = 1 / h_ratios
            ws = (w_ratios[:, None] * scales[None, :]).view(-1)
            hs = (h_ratios[:, None] * scales[None, :]).view(-1)
            base = (torch.stack([-ws, -hs, ws, hs], dim=1) / 2).round()
            gh, gw = fmap.shape[-2:]
            sh, sw = image_size[0] // gh, image_size[1] // gw
            shift_y, shift_x = torch.meshgrid(torch.arange(gh) * sh, torch.arange(gw) * sw, indexing="ij")
            shifts = torch.stack((shift_x.reshape(-1), shift_y.reshape(-1)) * 2, dim=1).float()
            anchors.append((shifts.view(-1, 1, 4) + base.view(1, -1, 4)).reshape(-1, 4))
        return torch.cat(anchors)


class RPNHead(nn.Module):
    def __init__(self, in_channels, num_anchors):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2d(in_channels, in_channels, 3, padding=1), nn.ReLU(inplace=True))
        self.cls_logits = nn.Conv2d(in_channels, num_anchors, kernel_size=1, stride=1)
        self.bbox_pred = nn.Conv2d(in_channels, num_anchors * 4, kernel_size=1, stride=1)
        for layer in self.modules():
            if isinstance(layer, nn.Conv2d):
                nn.init.normal_(layer.weight, std=0.01)
                nn.init.constant_(layer.bias, 0)

    def forward(self, x):
        logits, bbox_reg = [], []
        for feature in x:
            t = self.conv(feature)
            logits.append(self.cls_logits(t))
            bbox_reg.append(self.bbox_pred(t))
        return logits, bbox_reg


def concat_box_prediction_layers(box_cls, box_regression):
    box_cls_flattened, box_regression_flattened = [], []
    for box_cls_per_level, box_regression_per_level in zip(box_cls, box_regression):
        N, AxC, H, W = box_cls_per_level.shape
        A = box_regression_per_level.shape[1] // 4
        box_cls_flattened.append(box_cls_per_level.view(N, A, 1, H, W).permute(0, 3, 4, 1, 2).reshape(N, -1, 1))
        box_regression_flattened.append(
            box_regression_per_level.view(N, A, 4, H, W).permute(0, 3, 4, 1, 2).reshape(N, -1, 4))
    return torch.cat(box_cls_flattened, dim=1).flatten(0, -2), torch.cat(box_regression_flattened, dim=1).reshape(-1, 4)


class RegionProposalNetwork(nn.Module):
    def __init__(self, anchor_generator, head, pre_nms_top_n, post_nms_top_n, nms_thresh=0.7):
        super().__init__()
        self.anchor_generator = anchor_generator
        self.head = head
        self.box_coder = BoxCoder(weights=(1.0, 1.0, 1.0, 1.0))
        self.proposal_matcher = Matcher(0.7, 0.3, allow_low_quality_matches=True)
        self.fg_bg_sampler = BalancedPositiveNegativeSampler(64, 0.5)
        self._pre_nms_top_n = pre_nms_top_n
        self._post_nms_top_n = post_nms_top_n
        self.nms_thresh = nms_thresh

    def assign_targets_to_anchors(self, anchors, targets):
        labels, matched_gt_boxes = [], []
        for targets_per_image in targets:
            gt_boxes = targets_per_image["boxes"]
            match_quality_matrix = box_iou(gt_boxes, anchors)
            matched_idxs = self.proposal_matcher(match_quality_matrix)
            matched_gt_boxes.append(gt_boxes[matched_idxs.clamp(min=0)])
            labels_per_image = (matched_idxs >= 0).to(dtype=torch.float32)
            labels_per_image[matched_idxs == Matcher.BELOW_LOW_THRESHOLD] = 0.0
            labels_per_image[matched_idxs == Matcher.BETWEEN_THRESHOLDS] = -1.0
            labels.append(labels_per_image)
        return labels, matched_gt_boxes

    def filter_proposals(self, proposals, objectness, image_shape, num_anchors_per_level):
        num_images = proposals.shape[0]
        objectness = objectness.detach()
        objectness = objectness.reshape(num_images, -1)
        levels = torch.cat([torch.full((n,), idx, dtype=torch.int64) for idx, n in enumerate(num_anchors_per_level)])
        final_boxes = []
        for boxes, scores in zip(proposals, objectness):
            keep_all = []
            for lvl in range(len(num_anchors_per_level)):
                idx = torch.where(levels == lvl)[0]
                top = scores[idx].topk(min(self._pre_nms_top_n, idx.numel()))[1]
                keep_all.append(idx[top])
            keep_all = torch.cat(keep_all)
            boxes, scores, lvl = boxes[keep_all], scores[keep_all], levels[keep_all]
            boxes = torch.stack([boxes[:, 0].clamp(0, image_shape[1]), boxes[:, 1].clamp(0, image_shape[0]),
                                 boxes[:, 2].clamp(0, image_shape[1]), boxes[:, 3].clamp(0, image_shape[0])], 1)
            ws, hs = boxes[:, 2] - boxes[:, 0], boxes[:, 3] - boxes[:, 1]
            keep = torch.where((ws >= 1e-3) & (hs >= 1e-3))[0]
            boxes, scores, lvl = boxes[keep], scores[keep], lvl[keep]
            # batched_nms: offset boxes per level so levels do not suppress each other
            keep = nms(boxes + (lvl.float() * (image_shape[0] + image_shape[1]))[:, None], scores, self.nms_thresh)
            final_boxes.append(boxes[keep[: self._post_nms_top_n]])
        return final_boxes

    def compute_loss(self, objectness, pred_bbox_deltas, labels, regression_targets):
        sampled_pos_inds, sampled_neg_inds = self.fg_bg_sampler(labels)
        sampled_pos_inds = torch.where(torch.cat(sampled_pos_inds, dim=0))[0]
        sampled_neg_inds = torch.where(torch.cat(sampled_neg_inds, dim=0))[0]
        sampled_inds = torch.cat([sampled_pos_inds, sampled_neg_inds], dim=0)
        objectness = objectness.flatten()
        labels = torch.cat(labels, dim=0)
        regression_targets = torch.cat(regression_targets, dim=0)
        box_loss = F.smooth_l1_loss(pred_bbox_deltas[sampled_pos_inds], regression_targets[sampled_pos_inds],
                                    beta=1 / 9, reduction="sum") / (sampled_inds.numel())
        objectness_loss = F.binary_cross_entropy_with_logits(objectness[sampled_inds], labels[sampled_inds])
        return objectness_loss, box_loss

    def forward(self, image_size, features, targets=None):
        features = list(features.values())
        objectness, pred_bbox_deltas = self.head(features)
        anchors = self.anchor_generator(image_size, features)
        num_images = features[0].shape[0]
        num_anchors_per_level = [o[0].numel() for o in objectness]
        objectness, pred_bbox_deltas = concat_box_prediction_layers(objectness, pred_bbox_deltas)
        # apply pred_bbox_deltas to anchors to obtain the decoded proposals
        # note that we detach the deltas because Faster R-CNN do not backprop through the proposals
        all_anchors = anchors.repeat(num_images, 1)
        proposals = self.box_coder.decode(pred_bbox_deltas.detach(), all_anchors).view(num_images, -1, 4)
        boxes = self.filter_proposals(proposals, objectness, image_size, num_anchors_per_level)
        losses = {}
        if self.training:
            labels, matched_gt_boxes = self.assign_targets_to_anchors(anchors, targets)
            regression_targets = [self.box_coder.encode(m, anchors) for m in matched_gt_boxes]
            loss_objectness, loss_rpn_box_reg = self.compute_loss(objectness, pred_bbox_deltas, labels,
                                                                  regression_targets)
            losses = {"loss_objectness": loss_objectness, "loss_rpn_box_reg": loss_rpn_box_reg}
        return boxes, losses


# ---- torchvision/models/detection/roi_heads.py + faster_rcnn.py + mask_rcnn.py (stand-ins) ----
class TwoMLPHead(nn.Module):
    def __init__(self, in_channels, representation_size):
        super().__init__()
        self.fc6 = nn.Linear(in_channels, representation_size)
        self.fc7 = nn.Linear(representation_size, representation_size)

    def forward(self, x):
        return F.relu(self.fc7(F.relu(self.fc6(x.flatten(start_dim=1)))))


class FastRCNNPredictor(nn.Module):
    def __init__(self, in_channels, num_classes):
        super().__init__()
        self.cls_score = nn.Linear(in_channels, num_classes)
        self.bbox_pred = nn.Linear(in_channels, num_classes * 4)

    def forward(self, x):
        return self.cls_score(x), self.bbox_pred(x)


class MaskRCNNHeads(nn.Sequential):
    def __init__(self, in_channels, layers):
        blocks = []
        for layer_features in layers:
            blocks += [nn.Conv2d(in_channels, layer_features, 3, padding=1), nn.ReLU(inplace=True)]
            in_channels = layer_features
        super().__init__(*blocks)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
                nn.init.zeros_(m.bias)


class MaskRCNNPredictor(nn.Sequential):
    def __init__(self, in_channels, dim_reduced, num_classes):
        super().__init__()
        self.add_module("conv5_mask", nn.ConvTranspose2d(in_channels, dim_reduced, 2, 2, 0))
        self.add_module("relu", nn.ReLU(inplace=True))
        self.add_module("mask_fcn_logits", nn.Conv2d(dim_reduced, num_classes, 1, 1, 0))
        for name, param in self.named_parameters():
            if "weight" in name:
                nn.init.kaiming_normal_(param, mode="fan_out", nonlinearity="relu")


def fastrcnn_loss(class_logits, box_regression, labels, regression_targets):
    labels = torch.cat(labels, dim=0)
    regression_targets = torch.cat(regression_targets, dim=0)
    classification_loss = F.cross_entropy(class_logits, labels)
    sampled_pos_inds_subset = torch.where(labels > 0)[0]
    labels_pos = labels[sampled_pos_inds_subset]
    N, num_classes = class_logits.shape
    box_regression = box_regression.reshape(N, box_regression.size(-1) // 4, 4)
    box_loss = F.smooth_l1_loss(box_regression[sampled_pos_inds_subset, labels_pos],
                                regression_targets[sampled_pos_inds_subset], beta=1 / 9, reduction="sum")
    return classification_loss, box_loss / labels.numel()


def project_masks_on_boxes(gt_masks, boxes, matched_idxs, M):
    rois = torch.cat([matched_idxs[:, None].to(boxes), boxes], dim=1)
    return roi_align(gt_masks[:, None].float(), rois, M, 1.0)[:, 0]


def maskrcnn_loss(mask_logits, proposals, gt_masks, gt_labels, mask_matched_idxs):
    discretization_size = mask_logits.shape[-1]
    labels = [gt_label[idxs] for gt_label, idxs in zip(gt_labels, mask_matched_idxs)]
    mask_targets = [project_masks_on_boxes(m, p, i, discretization_size)
                    for m, p, i in zip(gt_masks, proposals, mask_matched_idxs)]
    labels = torch.cat(labels, dim=0)
    mask_targets = torch.cat(mask_targets, dim=0)
    return F.binary_cross_entropy_with_logits(mask_logits[torch.arange(labels.shape[0]), labels], mask_targets)


class RoIHeads(nn.Module):
    def __init__(self, box_roi_pool, box_head, box_predictor, mask_roi_pool, mask_head, mask_predictor,
                 batch_size_per_image=64, positive_fraction=0.25):
        super().__init__()
        self.box_roi_pool = box_roi_pool
        self.box_head = box_head
        self.box_predictor = box_predictor
        self.mask_roi_pool = mask_roi_pool
        self.mask_head = mask_head
        self.mask_predictor = mask_predictor
        self.proposal_matcher = Matcher(0.5, 0.5, allow_low_quality_matches=False)
        self.fg_bg_sampler = BalancedPositiveNegativeSampler(batch_size_per_image, positive_fraction)
        self.box_coder = BoxCoder((10.0, 10.0, 5.0, 5.0))

    def select_training_samples(self, proposals, targets):
        gt_boxes = [t["boxes"] for t in targets]
        gt_labels = [t["labels"] for t in targets]
        # append ground-truth bboxes to proposals
        proposals = [torch.cat((proposal, gt_box)) for proposal, gt_box in zip(proposals, gt_boxes)]
        matched_idxs, labels = [], []
        for proposals_in_image, gt_boxes_in_image, gt_labels_in_image in zip(proposals, gt_boxes, gt_labels):
            match_quality_matrix = box_iou(gt_boxes_in_image, proposals_in_image)
            matched_idxs_in_image = self.proposal_matcher(match_quality_matrix)
            clamped_matched_idxs_in_image = matched_idxs_in_image.clamp(min=0)
            labels_in_image = gt_labels_in_image[clamped_matched_idxs_in_image].to(dtype=torch.int64)
            labels_in_image[matched_idxs_in_image == Matcher.BELOW_LOW_THRESHOLD] = 0
            labels_in_image[matched_idxs_in_image == Matcher.BETWEEN_THRESHOLDS] = -1
            matched_idxs.append(clamped_matched_idxs_in_image)
            labels.append(labels_in_image)
        sampled_pos_inds, sampled_neg_inds = self.fg_bg_sampler(labels)
        sampled_inds = [torch.where(p | n)[0] for p, n in zip(sampled_pos_inds, sampled_neg_inds)]
        proposals = [p[i] for p, i in zip(proposals, sampled_inds)]
        labels = [l[i] for l, i in zip(labels, sampled_inds)]
        matched_idxs = [m[i] for m, i in zip(matched_idxs, sampled_inds)]
        matched_gt_boxes = [g[m] for g, m in zip(gt_boxes, matched_idxs)]
        regression_targets = [self.box_coder.encode(g, p) for g, p in zip(matched_gt_boxes, proposals)]
        return proposals, matched_idxs, labels, regression_targets

    def postprocess_detections(self, class_logits, box_regression, proposals, image_shape):
        pred_boxes = self.box_coder.decode(box_regression, torch.cat(proposals)).reshape(-1, class_logits.shape[-1], 4)
        pred_scores = F.softmax(class_logits, -1)
        results = []
        for boxes, scores in zip(pred_boxes.split([len(p) for p in proposals]),
                                 pred_scores.split([len(p) for p in proposals])):
            boxes = boxes[:, 1:].clamp(0, image_shape[0]).reshape(-1, 4)
            labels = torch.arange(1, scores.shape[1]).repeat(scores.shape[0])
            scores = scores[:, 1:].reshape(-1)
            keep = scores.topk(min(5, scores.numel()))[1]
            results.append({"boxes": boxes[keep], "scores": scores[keep], "labels": labels[keep]})
        return results

    def forward(self, features, proposals, image_shapes, targets=None):
        if self.training:
            proposals, matched_idxs, labels, regression_targets = self.select_training_samples(proposals, targets)
        box_features = self.box_roi_pool(features, proposals, image_shapes)
        box_features = self.box_head(box_features)
        class_logits, box_regression = self.box_predictor(box_features)
        result, losses = [], {}
        if self.training:
            loss_classifier, loss_box_reg = fastrcnn_loss(class_logits, box_regression, labels, regression_targets)
            losses = {"loss_classifier": loss_classifier, "loss_box_reg": loss_box_reg}
            # during training, only focus on positive boxes
            num_images = len(proposals)
            mask_proposals, pos_matched_idxs = [], []
            for img_id in range(num_images):
                pos = torch.where(labels[img_id] > 0)[0]
                mask_proposals.append(proposals[img_id][pos])
                pos_matched_idxs.append(matched_idxs[img_id][pos])
        else:
            result = self.postprocess_detections(class_logits, box_regression, proposals, image_shapes[0])
            mask_proposals = [r["boxes"] for r in result]
        mask_features = self.mask_roi_pool(features, mask_proposals, image_shapes)
        mask_features = self.mask_head(mask_features)
        mask_logits = self.mask_predictor(mask_features)
        if self.training:
            gt_masks = [t["masks"] for t in targets]
            gt_labels = [t["labels"] for t in targets]
            losses["loss_mask"] = maskrcnn_loss(mask_logits, mask_proposals, gt_masks, gt_labels, pos_matched_idxs)
        else:
            labels = torch.cat([r["labels"] for r in result])
            mask_probs = mask_logits.sigmoid()[torch.arange(labels.shape[0]), labels][:, None]
            for mask_prob, r in zip(mask_probs.split([len(r["boxes"]) for r in result]), result):
                r["masks"] = mask_prob
        return result, losses


class MaskRCNN(nn.Module):
    """GeneralizedRCNN: transform -> backbone -> rpn -> roi_heads; returns losses in training."""

    def __init__(self, backbone, num_classes):
        super().__init__()
        self.image_mean = [0.485, 0.456, 0.406]
        self.image_std = [0.229, 0.224, 0.225]
        self.backbone = backbone
        c = backbone.out_channels
        anchor_generator = AnchorGenerator(((8,), (16,), (32,), (64,), (128,)), ((0.5, 1.0, 2.0),) * 5)
        self.rpn = RegionProposalNetwork(anchor_generator, RPNHead(c, 3), pre_nms_top_n=50, post_nms_top_n=30)
        self.roi_heads = RoIHeads(
            MultiScaleRoIAlign(["0", "1", "2", "3"], 7, 2), TwoMLPHead(c * 7 * 7, 64), FastRCNNPredictor(64, num_classes),
            MultiScaleRoIAlign(["0", "1", "2", "3"], 14, 2), MaskRCNNHeads(c, (16, 16)),
            MaskRCNNPredictor(16, 16, num_classes))

    def forward(self, images, targets=None):
        # GeneralizedRCNNTransform: normalize and batch (no resize needed at this size)
        mean = torch.as_tensor(self.image_mean)[:, None, None]
        std = torch.as_tensor(self.image_std)[:, None, None]
        images = torch.stack([(img - mean) / std for img in images])
        image_size = tuple(images.shape[-2:])
        features = self.backbone(images)
        proposals, proposal_losses = self.rpn(image_size, features, targets)
        detections, detector_losses = self.roi_heads(features, proposals, [image_size] * images.shape[0], targets)
        if self.training:
            losses = {}
            losses.update(detector_losses)
            losses.update(proposal_losses)
            return losses
        return detections


def maskrcnn_resnet_fpn(num_classes, trainable_backbone_layers=3):
    # "ImageNet-pretrained" classification backbone with ordinary BatchNorm2d (stand-in for the downloaded weights)
    pretrained = ResNet(norm_layer=nn.BatchNorm2d)
    with torch.no_grad():
        for _ in range(3):
            pretrained(torch.rand(8, 3, 64, 64))
    weights_backbone = pretrained.state_dict()
    backbone = ResNet(norm_layer=FrozenBatchNorm2d)
    backbone.load_state_dict(weights_backbone)
    backbone = _resnet_fpn_extractor(backbone, trainable_backbone_layers)
    return MaskRCNN(backbone, num_classes)


# ---- references/detection (utils.py / engine.py) ----
def reduce_dict(input_dict, average=True):
    world_size = 1
    if world_size < 2:
        return input_dict


def make_sample():
    image = 0.1 * torch.rand(3, 64, 64)
    n = int(torch.randint(1, 3, (1,)))
    boxes, labels, masks = [], [], []
    for _ in range(n):
        w, h = torch.randint(12, 28, (2,)).tolist()
        x1, y1 = int(torch.randint(0, 64 - w, (1,))), int(torch.randint(0, 64 - h, (1,)))
        label = int(torch.randint(1, 3, (1,)))
        mask = torch.zeros(64, 64, dtype=torch.uint8)
        mask[y1:y1 + h, x1:x1 + w] = 1
        image[label - 1, y1:y1 + h, x1:x1 + w] += 0.8
        boxes.append([float(x1), float(y1), float(x1 + w), float(y1 + h)])
        labels.append(label)
        masks.append(mask)
    return image, {"boxes": torch.tensor(boxes), "labels": torch.tensor(labels, dtype=torch.int64),
                   "masks": torch.stack(masks)}


def train_one_epoch(model, optimizer, data_loader, epoch, step):
    model.train()
    lr_scheduler = None
    if epoch == 0:
        warmup_factor = 1.0 / 1000
        warmup_iters = min(1000, len(data_loader) - 1)
        lr_scheduler = torch.optim.lr_scheduler.LinearLR(optimizer, start_factor=warmup_factor,
                                                         total_iters=warmup_iters)
    for images, targets in data_loader:
        images = list(image for image in images)
        targets = [{k: v for k, v in t.items()} for t in targets]
        loss_dict = model(images, targets)
        losses = sum(loss for loss in loss_dict.values())

        # reduce losses over all GPUs for logging purposes
        loss_dict_reduced = reduce_dict(loss_dict)
        losses_reduced = sum(loss for loss in loss_dict_reduced.values())
        loss_value = losses_reduced.item()
        if not math.isfinite(loss_value):
            print(f"Loss is {loss_value}, stopping training")
            raise SystemExit(1)

        optimizer.zero_grad()
        losses.backward()
        optimizer.step()
        if lr_scheduler is not None:
            lr_scheduler.step()
        print(f"step {step} loss {losses.item():.6f}")
        step += 1
    return step


@torch.inference_mode()
def evaluate(model, data_loader):
    model.eval()
    n = 0
    for images, targets in data_loader:
        outputs = model(list(images))
        n += sum(len(o["boxes"]) for o in outputs)
    print(f"eval detections {n}")


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = maskrcnn_resnet_fpn(num_classes=3, trainable_backbone_layers=3)
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.SGD(params, lr=0.02, momentum=0.9, weight_decay=1e-4)
    lr_scheduler = torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones=[1], gamma=0.1)

    samples = [make_sample() for _ in range(6)]
    data_loader = [tuple(zip(*samples[i:i + 2])) for i in range(0, 6, 2)]
    step = 0
    for epoch in range(2):
        step = train_one_epoch(model, optimizer, data_loader, epoch, step)
        lr_scheduler.step()
        evaluate(model, data_loader[:1])

    if os.environ.get("REALWORLD_STATE"):
        torch.save({"model": model.state_dict()}, os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
