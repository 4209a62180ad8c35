# Report: "reproduce result" -- alexrich021/3dvnet issue #7
# https://github.com/alexrich021/3dvnet/issues/7
# What went wrong: in mv3d/lightningmodel.py (PL3DVNet.forward) the three depth-refinement
# networks (refine_quarter / refine_half / refine_full, PropagationNet) are run and their
# MAE losses (loss_refine_quarter, loss_refine_half, loss_refine) are computed and logged,
# but never added to `loss`. The refinement networks therefore receive no gradient and never
# train, although they are in the optimizer.
# Fix (maintainer, commit 617c110 "Just pushed the fix"): add `loss += loss_refine_quarter`,
# `loss += loss_refine_half` and `loss += loss_refine` after each refinement step.
# Plain-torch rewrite: Lightning, the MVSNet backbone, the PointNet/SparseUNet scene model and the
# PointFlow hypothesis decoder are reduced to tiny conv stand-ins with the same names.
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


def conv_bn_relu(in_channels, out_channels, kernel_size=3, stride=1, padding=1, **kwargs):
    return torch.nn.Sequential(
        torch.nn.Conv2d(in_channels, out_channels, kernel_size, stride, padding, bias=False, **kwargs),
        torch.nn.BatchNorm2d(out_channels),
        torch.nn.ReLU(inplace=True),
    )


class PropagationNet(nn.Module):
    def __init__(self, in_dim=4, h_dim=32):
        super(PropagationNet, self).__init__()
        self.conv1 = conv_bn_relu(in_dim, h_dim)
        self.conv2 = conv_bn_relu(h_dim, h_dim)
        self.conv3 = conv_bn_relu(h_dim, h_dim)
        self.conv4 = conv_bn_relu(h_dim, 9)
        self.unfold = nn.Unfold(kernel_size=(3, 3), stride=1, padding=0)

    def forward(self, features, depth):
        x = torch.cat((features, depth), dim=1)
        x = self.conv4(self.conv3(self.conv2(self.conv1(x))))
        p = F.softmax(x, dim=1)
        depth_pad = F.pad(depth, (1, 1, 1, 1), mode='replicate')
        depth_unfold = self.unfold(depth_pad)
        b, c, h, w = p.shape
        p = p.view(b, c, h * w)
        out = torch.sum(p * depth_unfold, dim=1)
        out = out.view(b, h, w)
        return out


class MVSNet(nn.Module):
    """Tiny stand-in: image features at 1/2 and 1/4 and an initial depth map at 1/4."""
    def __init__(self, feat_dim):
        super().__init__()
        self.feat_half = conv_bn_relu(3, feat_dim, stride=2)
        self.feat_quarter = conv_bn_relu(feat_dim, feat_dim, stride=2)
        self.depth_head = nn.Conv2d(feat_dim, 1, 3, 1, 1)

    def forward(self, images):
        feats_half = self.feat_half(images)
        feats_quarter = self.feat_quarter(feats_half)
        depth_pred = 1.0 + torch.sigmoid(self.depth_head(feats_quarter)).squeeze(1)
        return depth_pred, feats_half, feats_quarter


class HypothesisDecoder(nn.Module):
    """Tiny stand-in for the PointFlow offset decoder."""
    def __init__(self, feat_dim):
        super().__init__()
        self.net = nn.Conv2d(feat_dim + 1, 1, 3, 1, 1)

    def forward(self, feats, depth_pred):
        return 0.05 * torch.tanh(self.net(torch.cat((feats, depth_pred.unsqueeze(1)), dim=1))).squeeze(1)


class MAELoss(nn.Module):
    def forward(self, pred_depth_image, gt_depth_image, depth_interval):
        if gt_depth_image.shape != pred_depth_image.shape:
            gt_depth_image = F.interpolate(gt_depth_image.unsqueeze(1), pred_depth_image.shape[-2:], mode='nearest')\
                .squeeze(1)
        mask_valid = (~torch.eq(gt_depth_image, 0.0)).type(torch.float)
        denom = torch.sum(mask_valid, dim=(1, 2)) + 1e-7
        masked_abs_error = mask_valid * torch.abs(pred_depth_image - gt_depth_image)
        masked_mae = torch.sum(masked_abs_error, dim=(1, 2))
        masked_mae = torch.mean((masked_mae / depth_interval) / denom)
        return masked_mae


def calc_2d_depth_metrics(depth_pred, depth_gt):
    with torch.no_grad():
        return {'abs_rel': (torch.abs(depth_pred - depth_gt) / depth_gt).mean()}


class PL3DVNet(nn.Module):
    def __init__(self, feat_dim=8, depth_interval=0.05):
        super().__init__()
        self.depth_interval = depth_interval
        self.mvsnet = MVSNet(feat_dim)
        self.decoder = HypothesisDecoder(feat_dim)
        self.refine_quarter = PropagationNet(in_dim=feat_dim + 1, h_dim=16)
        self.refine_half = PropagationNet(in_dim=feat_dim + 1, h_dim=16)
        self.refine_full = PropagationNet(in_dim=3 + 1, h_dim=16)
        self.mae_loss = MAELoss()

    def forward(self, images, depth_images, n_iters=1):
        loss = torch.tensor(0., dtype=torch.float32, requires_grad=False)
        out = {'ref': []}

        depth_pred, feats_half, feats_quarter = self.mvsnet(images)

        # initial depth supervision
        depth_gt_sm = F.interpolate(depth_images.unsqueeze(1), depth_pred.shape[-2:], mode='nearest').squeeze(1)
        loss_2d = self.mae_loss(depth_pred, depth_gt_sm, self.depth_interval)
        out['initial'] = calc_2d_depth_metrics(depth_pred, depth_gt_sm)
        out['loss_2d'] = loss_2d
        loss += loss_2d

        for i in range(n_iters):
            offset_pred = self.decoder(feats_quarter, depth_pred)
            depth_pred = depth_pred + offset_pred
            loss_offset = self.mae_loss(depth_pred, depth_gt_sm, self.depth_interval)
            loss += loss_offset
            out['ref'].append({'loss_2d': loss_offset})

        # starting size --> 1/4
        depth_pred = self.refine_quarter(feats_quarter, depth_pred.unsqueeze(1)).squeeze(1)

        # 1/4 supervision
        depth_gt_quarter = F.interpolate(depth_images.unsqueeze(1), depth_pred.shape[-2:], mode='nearest').squeeze(1)
        loss_refine_quarter = self.mae_loss(depth_pred, depth_gt_quarter, self.depth_interval)
        metrics = calc_2d_depth_metrics(depth_pred, depth_gt_quarter)
        metrics['loss_2d'] = loss_refine_quarter
        out['quarter'] = metrics

        loss += loss_refine_quarter

        # 1/4 --> 1/2
        depth_pred = F.interpolate(depth_pred.unsqueeze(1), feats_half.shape[-2:], mode='nearest').squeeze(1)
        depth_pred = self.refine_half(feats_half, depth_pred.unsqueeze(1)).squeeze(1)

        # 1/2 supervision
        depth_gt_half = F.interpolate(depth_images.unsqueeze(1), depth_pred.shape[-2:], mode='nearest').squeeze(1)
        loss_refine_half = self.mae_loss(depth_pred, depth_gt_half, self.depth_interval)
        metrics = calc_2d_depth_metrics(depth_pred, depth_gt_half)
        metrics['loss_2d'] = loss_refine_half
        out['half'] = metrics

        loss += loss_refine_half

        # 1/2 --> image size
        depth_pred = F.interpolate(depth_pred.unsqueeze(1), images.shape[-2:], mode='nearest').squeeze(1)
        depth_pred = self.refine_full(images, depth_pred.unsqueeze(1)).squeeze(1)

        # final supervision
        loss_refine = self.mae_loss(depth_pred, depth_images, self.depth_interval)
        metrics = calc_2d_depth_metrics(depth_pred, depth_images)
        metrics['loss_2d'] = loss_refine
        out['final'] = metrics

        loss += loss_refine

        out['loss'] = loss
        return out

    def training_step(self, batch, batch_idx):
        out = self.forward(batch['images'], batch['depth_images'])
        return out['loss']

    def configure_optimizers(self):
        optimizer = torch.optim.Adam([
            {'params': self.mvsnet.parameters()},
            {'params': self.decoder.parameters()},
            {'params': self.refine_quarter.parameters()},
            {'params': self.refine_half.parameters()},
            {'params': self.refine_full.parameters()},
        ], lr=1e-3)
        return optimizer


model = PL3DVNet()
optimizer = model.configure_optimizers()
batch = {'images': torch.rand(2, 3, 16, 20),
         'depth_images': 1.0 + torch.rand(2, 16, 20)}

for batch_idx in range(3):
    optimizer.zero_grad()
    loss = model.training_step(batch, batch_idx)
    loss.backward()
    optimizer.step()
    print(f"step {batch_idx}: loss {loss.item():.4f}")

grad_mvsnet = model.mvsnet.depth_head.weight.grad
print("mvsnet.depth_head.weight.grad:", None if grad_mvsnet is None else grad_mvsnet.norm().item())
grad_refine = model.refine_quarter.conv1[0].weight.grad
print("refine_quarter.conv1.weight.grad:", None if grad_refine is None else grad_refine.norm().item())
