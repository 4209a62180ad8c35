"""Deformable-PV-RCNN (AutoVision-cloud/Deformable-PV-RCNN#8,
https://github.com/AutoVision-cloud/Deformable-PV-RCNN/issues/8): in StackSAModuleMSGAdapt.forward the second
grouping runs under `with torch.no_grad():` -- "will the self.pred_offset.weight not be learnt?"
Why: pred_offset predicts the node offsets that move mod_xyz, and mod_xyz reaches the loss only through
self.groupers[k](..., mod_xyz, ...) (the relative xyz of each grouped neighbour). Under no_grad that grouping keeps
no graph, so pred_offset.weight gets no gradient and the deformation never learns. The maintainer: the no_grad was a
work-around for an error the stack implementation threw without it -- the in-place clamps on mod_xyz overwrite the
input ClampBackward saved, which backward only reaches once the no_grad is gone.
Fix: run the grouping with autograd and clamp mod_xyz out of place (torch.stack of the three clamps).
pcdet's pointnet2_stack QueryAndGroup / ball_query / grouping_operation (CUDA ops) are written below in torch."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from typing import List


def ball_query(radius, nsample, xyz, xyz_batch_cnt, new_xyz, new_xyz_batch_cnt):
    """pcdet pointnet2_stack ball_query (one batch): first nsample neighbours within radius, padded with the first."""
    dist = torch.cdist(new_xyz.detach(), xyz)
    within = dist < radius
    order = torch.where(within, torch.arange(xyz.shape[0]).float(), float('inf')).sort(dim=1).values[:, :nsample]
    empty_ball_mask = torch.isinf(order[:, 0])
    order = torch.where(torch.isinf(order), order[:, :1], order)
    idx = torch.where(torch.isinf(order), torch.zeros_like(order), order).long()
    return idx, empty_ball_mask


def grouping_operation(features, features_batch_cnt, idx, idx_batch_cnt):
    """pcdet pointnet2_stack grouping_operation: (N, C) gathered at idx (M, nsample) -> (M, C, nsample)."""
    return features[idx].permute(0, 2, 1)


class QueryAndGroup(nn.Module):
    def __init__(self, radius: float, nsample: int, use_xyz: bool = True):
        super().__init__()
        self.radius, self.nsample, self.use_xyz = radius, nsample, use_xyz

    def forward(self, xyz, xyz_batch_cnt, new_xyz, new_xyz_batch_cnt, features=None):
        idx, empty_ball_mask = ball_query(self.radius, self.nsample, xyz, xyz_batch_cnt, new_xyz, new_xyz_batch_cnt)
        grouped_xyz = grouping_operation(xyz, xyz_batch_cnt, idx, new_xyz_batch_cnt)  # (M1 + M2, 3, nsample)
        grouped_xyz -= new_xyz.unsqueeze(-1)
        grouped_xyz[empty_ball_mask] = 0
        grouped_features = grouping_operation(features, xyz_batch_cnt, idx, new_xyz_batch_cnt)
        grouped_features[empty_ball_mask] = 0
        new_features = torch.cat([grouped_xyz, grouped_features], dim=1)  # (M1 + M2 ..., C + 3, nsample)
        return new_features, idx


class StackSAModuleMSGAdapt(nn.Module):
    def __init__(self, *, radii: List[float], nsamples: List[int], mlps: List[List[int]],
                 use_xyz: bool = True, pool_method='max_pool'):
        super().__init__()
        self.groupers = nn.ModuleList()
        self.mlps = nn.ModuleList()
        self.adapt_groupers = nn.ModuleList()
        c_out = mlps[0][0] + 3 if use_xyz else mlps[0][0]
        offset_dim = 3
        self.pred_offset = nn.Sequential(nn.Conv2d(c_out, offset_dim, kernel_size=1, bias=False), nn.Tanh())

        for i in range(len(radii)):
            radius = radii[i]
            nsample = nsamples[i]
            self.groupers.append(QueryAndGroup(radius, nsample, use_xyz=use_xyz))
            self.adapt_groupers.append(QueryAndGroup(radius, nsample, use_xyz=use_xyz))
            mlp_spec = mlps[i]
            if use_xyz:
                mlp_spec[0] += 3
            shared_mlps = []
            for k in range(len(mlp_spec) - 1):
                shared_mlps.extend([
                    nn.Conv2d(mlp_spec[k], mlp_spec[k + 1], kernel_size=1, bias=False),
                    nn.BatchNorm2d(mlp_spec[k + 1]),
                    nn.ReLU()
                ])
            self.mlps.append(nn.Sequential(*shared_mlps))
        self.pool_method = pool_method

    def forward(self, xyz, xyz_batch_cnt, new_xyz, new_xyz_batch_cnt, features=None, empty_voxel_set_zeros=True):
        new_features_list = []
        for k in range(len(self.groupers)):
            mod_xyz = new_xyz.clone()
            grouped_features, _ = self.adapt_groupers[k](xyz, xyz_batch_cnt, new_xyz,
                                                         new_xyz_batch_cnt, features)  # (M1 + M2, C, nsample)
            # Learn node offset
            grouped_features = grouped_features.unsqueeze(0).permute(0, 2, 1, 3)
            grouped_xyz = grouped_features[:, :3, :]
            semantic_trans = self.pred_offset(grouped_features)  # [B, 3, npoint, nsample]
            node_offset = (semantic_trans * grouped_xyz).mean(dim=-1)  # [B, 3, npoint, 1]

            # Update node and get node feature
            mod_xyz += node_offset.squeeze(-1).transpose(1, 2).squeeze(0).contiguous()  # (B, npoint, 3)
            mod_xyz = torch.stack([torch.clamp(mod_xyz[:, 0], 0, 70),
                                   torch.clamp(mod_xyz[:, 1], -40, 40),
                                   torch.clamp(mod_xyz[:, 2], -3, 3)], dim=1)
            # the grouping runs with autograd, so the offsets reach the loss
            new_features, _ = self.groupers[k](xyz, xyz_batch_cnt, mod_xyz, new_xyz_batch_cnt, features)  # (M1 + M2, C, nsample)
            new_features = new_features.permute(1, 0, 2).unsqueeze(dim=0)  # (1, C, M1 + M2 ..., nsample)
            new_features = self.mlps[k](new_features)  # (1, C, M1 + M2 ..., nsample)
            new_features = F.max_pool2d(new_features, kernel_size=[1, new_features.size(3)]).squeeze(dim=-1)
            new_features = new_features.squeeze(dim=0).permute(1, 0)  # (M1 + M2 ..., C)
            new_features_list.append(new_features)

        new_features = torch.cat(new_features_list, dim=1)  # (M1 + M2 ..., C)
        return new_xyz, new_features


torch.manual_seed(0)
num_points, num_grid, C = 64, 8, 4
xyz = torch.rand(num_points, 3) * torch.tensor([10., 10., 2.]) + torch.tensor([0., -5., -1.])
features = torch.randn(num_points, C)
new_xyz = xyz[torch.randperm(num_points)[:num_grid]] + 0.1
xyz_batch_cnt, new_xyz_batch_cnt = torch.tensor([num_points]), torch.tensor([num_grid])
target = torch.randn(num_grid, 1)

sa_layer = StackSAModuleMSGAdapt(radii=[2.0], nsamples=[8], mlps=[[C, 16, 16]])
head = nn.Linear(16, 1)
optimizer = torch.optim.Adam(list(sa_layer.parameters()) + list(head.parameters()), lr=0.01)
before = sa_layer.pred_offset[0].weight.detach().clone()
for step in range(3):
    _, pooled = sa_layer(xyz, xyz_batch_cnt, new_xyz, new_xyz_batch_cnt, features)
    loss = F.mse_loss(head(pooled), target)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.4f}")
g = sa_layer.pred_offset[0].weight.grad
print("pred_offset.weight.grad:", None if g is None else f"norm {g.norm():.2e}")
print("pred_offset weights changed:", not torch.equal(before, sa_layer.pred_offset[0].weight))
