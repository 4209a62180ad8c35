"""I2D-Loc (EasonChen99/I2D-Loc#8, https://github.com/EasonChen99/I2D-Loc/issues/8): in main_bpnp.py's train() the
BPnP pose loss warps the lidar points with `flow_up[i].unsqueeze(0).int()`, copies the result to NumPy, rebuilds
pts2d/pts3d with torch.tensor(...), and then sets `pts2d_pro.requires_grad = True`, which "only makes them leaves of
their own" and cannot reconnect P_out -> BPnP -> pts2d -> flow_up to the RAFT weights. The maintainer agreed ("Yes,
you are right"). The flow losses still train, so the pose term is silently dead. Fix: build pts2d from the float
flow with tensor ops (no .int(), no NumPy round trip)."""
import numpy as np
import torch
import torch.nn as nn


def image_warp_index(depth, flow):
    """Moves every lidar pixel by its (integer) flow and writes its new (u, v) there, as the CUDA kernel does."""
    _, H, W = depth.shape
    output = torch.zeros(2, H, W)
    for v in range(H):
        for u in range(W):
            if depth[0, v, u] > 0:
                nu = int(min(max(u + flow[0, v, u], 0), W - 1))
                nv = int(min(max(v + flow[1, v, u], 0), H - 1))
                output[0, nv, nu], output[1, nv, nu] = nu, nv
    return output


def deproject(depth_img, uv, K):
    vs, us = np.nonzero(uv[:, :, 0] + uv[:, :, 1])
    pts2d = uv[vs, us]
    z = depth_img[vs, us] + 1.0
    pts3d = np.stack([(us - K[0, 2]) * z / K[0, 0], (vs - K[1, 2]) * z / K[1, 1], z], axis=1)
    return pts3d, pts2d


def batch_project(P, pts3d, K):
    uv = (pts3d @ K.T)[:, :2] / pts3d[:, 2:3]
    return uv + P


def bpnp(pts2d, pts3d, K):
    """Stands in for BPnP.apply: the pose (here a 2D shift) that best maps pts3d onto pts2d, differentiable."""
    return (pts2d - batch_project(torch.zeros(2), pts3d, K)).mean(0)


class FlowNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(4, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 2, 3, padding=1))

    def forward(self, depth, rgb):
        return [3.0 * self.net(torch.cat([depth, rgb], 1))]


def train(model, optimizer, lidar_input, rgb_input, flow_gt, P_gt, K):
    optimizer.zero_grad()
    flow_preds = model(lidar_input, rgb_input)
    loss = sum((f - flow_gt).abs().mean() for f in flow_preds)
    loss_poses = 0.0
    flow_up = flow_preds[-1]
    pc_project_uv = np.zeros([lidar_input.shape[0], lidar_input.shape[2], lidar_input.shape[3], 2])
    for i in range(flow_up.shape[0]):
        output = image_warp_index(lidar_input[i], flow_up[i].int())  # <- cut_term
        pc_project_uv[i] = output.permute(1, 2, 0).cpu().numpy()
    for n in range(lidar_input.shape[0]):
        pts3d, pts2d = deproject(lidar_input[n, 0].cpu().numpy(), pc_project_uv[n], K.numpy())
        pts3d = torch.tensor(pts3d, dtype=torch.float32)
        pts2d = torch.tensor(pts2d, dtype=torch.float32)
        P_out = bpnp(pts2d, pts3d, K)
        pts2d_pro = batch_project(P_out, pts3d, K)
        pts2d_gt = batch_project(P_gt[n], pts3d, K)
        pts2d_gt.requires_grad = True
        pts2d_pro.requires_grad = True
        loss_poses += ((pts2d_pro - pts2d_gt) ** 2).mean()
    loss_pose = loss_poses / lidar_input.shape[0]
    loss = loss + loss_pose * 10
    loss.backward()
    optimizer.step()
    return loss_pose


torch.manual_seed(0)
model = FlowNet()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
K = torch.tensor([[4.0, 0.0, 3.0], [0.0, 4.0, 3.0], [0.0, 0.0, 1.0]])
lidar_input = torch.rand(2, 1, 6, 6) * (torch.rand(2, 1, 6, 6) > 0.5)
rgb_input, flow_gt, P_gt = torch.rand(2, 3, 6, 6), torch.randn(2, 2, 6, 6), torch.randn(2, 2)
for epoch in range(3):
    loss_pose = train(model, optimizer, lidar_input, rgb_input, flow_gt, P_gt, K)
    print(f"epoch {epoch}: pose loss {loss_pose.item():.4f}, conv weight {model.net[0].weight.sum().item():.4f}")
