"""Fixed twin of bug.py (EasonChen99/I2D-Loc#8): the warped points are built from the float flow with tensor ops, so
the BPnP pose loss reaches the flow network."""
import torch
import torch.nn as nn


def deproject_flow(depth_img, flow, K):
    """The lidar points and where the float flow moves them, kept as tensors on the flow's graph."""
    vs, us = torch.nonzero(depth_img > 0, as_tuple=True)
    pts2d = torch.stack([us.float(), vs.float()], 1) + flow[:, vs, us].T
    z = depth_img[vs, us] + 1.0
    pts3d = torch.stack([(us - K[0, 2]) * z / K[0, 0], (vs - K[1, 2]) * z / K[1, 1], z], 1)
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
    for n in range(lidar_input.shape[0]):
        pts3d, pts2d = deproject_flow(lidar_input[n, 0], flow_up[n], K)
        P_out = bpnp(pts2d, pts3d, K)
        pts2d_pro = batch_project(P_out, pts3d, K)
        pts2d_gt = batch_project(P_gt[n], pts3d, K)
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
