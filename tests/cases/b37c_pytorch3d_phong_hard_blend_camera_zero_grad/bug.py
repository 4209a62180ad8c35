"""PyTorch3D (facebookresearch/pytorch3d#74): in the camera-position-optimisation tutorial the user swaps the
silhouette renderer for the phong_renderer. The loss compares the rendered alpha channel with the reference
silhouette; the optimisation then gets a zero gradient and the camera position never moves.
Why (maintainer): the phong renderer rasterises one face per pixel and blends hard: the alpha of a pixel is
just "some face covers it" (pix_to_face >= 0), a comparison, so no gradient reaches the vertices' screen
positions and hence the camera. Fix: rasterise with a blur radius / many faces per pixel and blend with
softmax_rgb_blend, whose alpha is 1 - prod(1 - sigmoid(-dist / sigma)) (a SoftPhongShader). The stand-in rasteriser
below already returns the distance to every face, so the fix shows as the blend of the alpha channel."""
import math
import torch
from torch import nn
import torch.nn.functional as F

torch.manual_seed(0)
IMG, SIGMA = 24, 1e-2


def look_at_rotation(camera_position):
    z = F.normalize(-camera_position, dim=-1)                       # looking at the origin
    x = F.normalize(torch.cross(torch.tensor([0., 1., 0.]), z, dim=-1), dim=-1)
    y = torch.cross(z, x, dim=-1)
    return torch.stack([x, y, z], dim=1)                            # columns: camera axes in world


class MeshRasterizer(nn.Module):
    """Stand-in for PyTorch3D's rasteriser: per pixel and face, the signed distance to the face's border in screen
    space (positive inside), and pix_to_face, the closest covering face or -1."""

    def forward(self, verts, faces, R, T):
        cam = verts @ R + T                                         # world -> view
        xy = cam[:, :2] / cam[:, 2:3] * 1.5                         # perspective projection to NDC
        g = torch.linspace(-1, 1, IMG)
        py, px = torch.meshgrid(g, g, indexing="ij")
        pix = torch.stack([px, py], -1).reshape(-1, 1, 2)           # [P, 1, 2]
        a, b, c = xy[faces[:, 0]], xy[faces[:, 1]], xy[faces[:, 2]]  # [F, 2]
        area = (b - a)[:, 0] * (c - a)[:, 1] - (b - a)[:, 1] * (c - a)[:, 0]
        dists = []
        for p0, p1 in ((a, b), (b, c), (c, a)):
            e = p1 - p0
            cr = e[:, 0] * (pix[..., 1] - p0[:, 1]) - e[:, 1] * (pix[..., 0] - p0[:, 0])
            dists.append(torch.sign(area) * cr / e.norm(dim=-1))
        dist = torch.stack(dists, -1).min(-1).values                # [P, F]
        zbuf = torch.where(dist > 0, cam[faces, 2].mean(-1).expand_as(dist), torch.full_like(dist, math.inf))
        pix_to_face = torch.where(torch.isinf(zbuf.min(-1).values), -1, zbuf.argmin(-1))
        return pix_to_face, dist


class HardPhongShader(nn.Module):
    def forward(self, pix_to_face, dist, face_colors):
        colors = face_colors[pix_to_face.clamp(min=0)] * (pix_to_face >= 0)[:, None]
        alpha = (pix_to_face >= 0).float()  # <- non_differentiable
        return torch.cat([colors, alpha[:, None]], -1).reshape(IMG, IMG, 4)


class Model(nn.Module):
    def __init__(self, verts, faces, image_ref):
        super().__init__()
        self.verts, self.faces = verts, faces
        self.rasterizer, self.shader = MeshRasterizer(), HardPhongShader()
        self.register_buffer("image_ref", image_ref)
        self.camera_position = nn.Parameter(torch.tensor([1.2, 0.6, -3.0]))

    def forward(self):
        R = look_at_rotation(self.camera_position)
        T = -self.camera_position @ R
        pix_to_face, dist = self.rasterizer(self.verts, self.faces, R, T)
        v = self.verts[self.faces]                                   # Phong-ish face shading, view dependent
        n = F.normalize(torch.cross(v[:, 1] - v[:, 0], v[:, 2] - v[:, 0], dim=-1), dim=-1)
        view = F.normalize(self.camera_position - v.mean(1), dim=-1)
        face_colors = (0.3 + 0.7 * (n * view).sum(-1).abs())[:, None].expand(-1, 3)
        image = self.shader(pix_to_face, dist, face_colors)
        loss = torch.sum((image[..., 3] - self.image_ref) ** 2)
        return loss, image


# a small closed mesh (octahedron) and the reference silhouette from the true camera position
verts = torch.tensor([[1., 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1]]) * 0.8
faces = torch.tensor([[0, 2, 4], [2, 1, 4], [1, 3, 4], [3, 0, 4], [2, 0, 5], [1, 2, 5], [3, 1, 5], [0, 3, 5]])
with torch.no_grad():
    R0 = look_at_rotation(torch.tensor([0., 0., -3.]))
    p2f, _ = MeshRasterizer()(verts, faces, R0, torch.tensor([0., 0., -3.]) @ -R0)
    image_ref = (p2f >= 0).float().reshape(IMG, IMG)

model = Model(verts, faces, image_ref)
optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
for i in range(3):
    optimizer.zero_grad()
    loss, _ = model()
    loss.backward()
    optimizer.step()
    print(f"iter {i} loss {loss.item():.3f} camera_position {model.camera_position.data.tolist()}")
print("camera_position.grad:", model.camera_position.grad)
