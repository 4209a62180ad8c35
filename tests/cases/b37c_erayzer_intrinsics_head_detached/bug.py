"""E-RayZer (QitaoZhao/E-RayZer#12): the self-supervised 3D reconstruction model predicts per-view camera poses and
intrinsics (fx, fy, cx, cy) from camera tokens, builds Plucker rays from them, predicts pixel-aligned 3D Gaussians
and renders them back with the predicted cameras. forward() detaches the predicted intrinsics right after
get_cam_se3(), so no gradient of the rendering loss reaches the intrinsics branch: canonical_k_head never learns.
The maintainer called the .detach() an unintended mistake; the fix removes it."""
import torch
from torch import nn
import torch.nn.functional as F

torch.manual_seed(0)
D, P, H, W, V = 32, 4, 8, 8, 3          # token dim, patch size, image size, views


def rot6d2mat(x):
    a1, a2 = x[..., :3], x[..., 3:6]
    b1 = F.normalize(a1, dim=-1)
    b2 = F.normalize(a2 - (b1 * a2).sum(-1, keepdim=True) * b1, dim=-1)
    return torch.stack([b1, b2, torch.cross(b1, b2, dim=-1)], dim=-1)


def get_cam_se3(cam_info):
    rot, trans, fxfycxcy = cam_info.split([6, 3, 4], dim=-1)
    c2w = torch.eye(4).repeat(cam_info.shape[0], 1, 1)
    c2w = torch.cat([torch.cat([rot6d2mat(rot), trans[:, :, None]], dim=2), c2w[:, 3:]], dim=1)
    return c2w, fxfycxcy


def cam_info_to_plucker(c2w, fxfycxcy, h, w):
    y, x = torch.meshgrid(torch.arange(h), torch.arange(w), indexing="ij")
    x, y = x.reshape(1, -1).float() / w, y.reshape(1, -1).float() / h
    x = (x + 0.5 / w - fxfycxcy[:, 2:3]) / fxfycxcy[:, 0:1]
    y = (y + 0.5 / h - fxfycxcy[:, 3:4]) / fxfycxcy[:, 1:2]
    ray_d = torch.stack([x, y, torch.ones_like(x)], dim=2)
    ray_d = F.normalize(torch.bmm(ray_d, c2w[:, :3, :3].transpose(1, 2)), dim=2)
    ray_o = c2w[:, :3, 3][:, None, :].expand_as(ray_d)
    return ray_o, ray_d                                                      # [v, h*w, 3]


class PoseEstimator(nn.Module):
    def __init__(self):
        super().__init__()
        self.rel_head = nn.Sequential(nn.Linear(D, D), nn.SiLU(), nn.Linear(D, 9))
        self.canonical_k_head = nn.Sequential(nn.Linear(D, D), nn.SiLU(), nn.Linear(D, 1, bias=False))
        self.f_bias = 1.25

    def forward(self, x):
        rt = torch.tensor([1., 0, 0, 0, 1, 0, 0, 0, 0]) + self.rel_head(x)
        fxfy = (self.canonical_k_head(x) + self.f_bias).mean(0, keepdim=True).repeat(x.shape[0], 2)
        cxcy = torch.full((x.shape[0], 2), 0.5)
        return torch.cat([rt, fxfy, cxcy], dim=-1)


class ERayZer(nn.Module):
    def __init__(self):
        super().__init__()
        self.image_tokenizer = nn.Linear(3 * P * P, D, bias=False)
        self.camera_token = nn.Parameter(torch.randn(1, D) * 0.02)
        self.encoder = nn.Sequential(nn.Linear(D, D), nn.SiLU())
        self.pose_predictor = PoseEstimator()
        self.input_pose_tokenizer = nn.Linear(6 * P * P, D, bias=False)
        self.mlp_fuse = nn.Sequential(nn.Linear(2 * D, D), nn.SiLU(), nn.Linear(D, D))
        self.image_token_decoder = nn.Linear(D, P * P * 4, bias=False)      # per pixel: depth + rgb

    def forward(self, image):                                                # [v, 3, H, W]
        patches = F.unfold(image, P, stride=P).transpose(1, 2)               # [v, n, 3*P*P]
        img_tokens = self.image_tokenizer(patches)
        cam_tokens = self.encoder(img_tokens.mean(1) + self.camera_token)
        cam_info = self.pose_predictor(cam_tokens)
        pred_c2w, pred_fxfycxcy = get_cam_se3(cam_info)
        pred_fxfycxcy = pred_fxfycxcy.reshape(V, 4).detach()  # <- detach

        ray_o, ray_d = cam_info_to_plucker(pred_c2w, pred_fxfycxcy, H, W)
        plucker = torch.cat([torch.cross(ray_o, ray_d, dim=2), ray_d], dim=2)  # [v, h*w, 6]
        plucker = F.unfold(plucker.transpose(1, 2).reshape(V, 6, H, W), P, stride=P).transpose(1, 2)
        tokens = self.mlp_fuse(torch.cat([img_tokens, self.input_pose_tokenizer(plucker)], dim=-1))
        gs = F.fold(self.image_token_decoder(tokens).transpose(1, 2), (H, W), P, stride=P)
        gs = gs.reshape(V, 4, H * W).transpose(1, 2)                         # [v, h*w, 4]
        xyz = ray_o + torch.sigmoid(gs[..., :1]) * 3.0 * ray_d               # pixel-aligned Gaussians
        return render(xyz.reshape(-1, 3), torch.sigmoid(gs[..., 1:]).reshape(-1, 3), pred_c2w, pred_fxfycxcy)


def render(xyz, rgb, c2w, fxfycxcy):
    """Soft point splatting of the Gaussians into every predicted camera (stand-in for the rasteriser)."""
    w2c = torch.linalg.inv(c2w)
    cam = torch.einsum("vij,nj->vni", w2c[:, :3, :3], xyz) + w2c[:, None, :3, 3]
    z = cam[..., 2:3].clamp(min=0.1)
    u = fxfycxcy[:, None, 0:1] * cam[..., 0:1] / z + fxfycxcy[:, None, 2:3]
    v = fxfycxcy[:, None, 1:2] * cam[..., 1:2] / z + fxfycxcy[:, None, 3:4]
    gy, gx = torch.meshgrid((torch.arange(H) + 0.5) / H, (torch.arange(W) + 0.5) / W, indexing="ij")
    d2 = (gx.reshape(1, -1, 1) - u.transpose(1, 2)) ** 2 + (gy.reshape(1, -1, 1) - v.transpose(1, 2)) ** 2
    wgt = torch.softmax(-d2 / 0.01, dim=-1)                                  # [v, h*w, n]
    return (wgt @ rgb).transpose(1, 2).reshape(V, 3, H, W)


model = ERayZer()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
images = torch.rand(V, 3, H, W)
for step in range(3):
    opt.zero_grad()
    render_out = model(images * 2 - 1)
    loss = F.mse_loss(render_out, images)
    loss.backward()
    opt.step()
    print(f"step {step} loss {loss.item():.4f}")
print("rel_head grad norm:", model.pose_predictor.rel_head[0].weight.grad.norm().item())
print("canonical_k_head grad norm:", model.pose_predictor.canonical_k_head[0].weight.grad.norm().item())
