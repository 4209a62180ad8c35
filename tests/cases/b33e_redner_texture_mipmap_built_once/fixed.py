"""redner issue #10 "How to optimize SVBRDF(Texture)", https://github.com/BachiLi/redner/issues/10: the user
optimizes texture texels `text` (a leaf with requires_grad=True, in Adam) and wraps them once, before the loop, as
material.diffuse_reflectance = pyredner.Texture(text). pyredner.Texture builds its mipmap from the texels in its
constructor, so that part of the graph is made once; the first loss.backward() frees it and the second iteration
fails with "Trying to backward through the graph a second time" ("I have to add retain_graph=True here to get it
work"). With retain_graph=True the texels do change but the rendered image does not: the mipmap the renderer reads
is still the one computed from the first texels.
Fix (the reporter's own, as pyredner's tutorials do): re-assign the texture from the current texels at every
iteration, scene.materials[-2].diffuse_reflectance = pyredner.Texture(text), so the mipmap and its graph are made
anew each step. The renderer below is a small PyTorch stand-in that samples the mipmap like redner does. This
fixed twin applies it; the texels converge to the target's."""
import math

import numpy as np
import torch
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(1)


class Texture:
    def __init__(self, texels):
        self._texels = texels
        self.generate_mipmap()

    def generate_mipmap(self):
        texels = self._texels
        num_levels = min(math.ceil(math.log(max(texels.shape[0], texels.shape[1]), 2) + 1), 3)
        num_channels = texels.shape[2]
        box_filter = torch.ones(num_channels, 1, 2, 2) / 4.0
        mipmap = [texels.contiguous()]
        prev_lvl = texels.unsqueeze(0).permute(0, 3, 1, 2)
        for _ in range(1, num_levels):
            current_lvl = F.pad(prev_lvl, (0, 1, 0, 1), mode="circular")
            current_lvl = F.conv2d(current_lvl, box_filter, groups=num_channels)
            next_size = (max(current_lvl.shape[2] // 2, 1), max(current_lvl.shape[3] // 2, 1))
            current_lvl = F.interpolate(current_lvl, size=next_size, mode="area")
            mipmap.append(current_lvl.squeeze(0).permute(1, 2, 0).contiguous())
            prev_lvl = current_lvl
        self.mipmap = mipmap


class Material:
    def __init__(self, diffuse_reflectance):
        self.diffuse_reflectance = diffuse_reflectance


def render(material, uv, level_weights, light):
    """Trilinear texture lookup at each pixel's uv, times the incoming light."""
    color = 0
    for w, level in zip(level_weights, material.diffuse_reflectance.mipmap):
        tex = level.permute(2, 0, 1).unsqueeze(0)
        color = color + w * F.grid_sample(tex, uv, mode="bilinear", align_corners=False)
    return color[0].permute(1, 2, 0) * light


# a textured quad seen by the camera: every pixel has its uv and its mip level blend
ys, xs = torch.meshgrid(torch.linspace(-0.9, 0.9, 24), torch.linspace(-0.9, 0.9, 24), indexing="ij")
uv = torch.stack([xs + 0.05 * ys, ys], -1).unsqueeze(0)
level_weights = [0.6, 0.3, 0.1]
light = torch.linspace(0.6, 1.0, 24).view(24, 1, 1)

gt_texels = torch.rand(16, 16, 3)
target = render(Material(Texture(gt_texels)), uv, level_weights, light)

text = torch.tensor(np.ones((16, 16, 3)) * 0.5, dtype=torch.float32, requires_grad=True)
material = Material(diffuse_reflectance=Texture(text))
optimizer = torch.optim.Adam([text], lr=0.05)

for t in range(30):
    optimizer.zero_grad()
    material.diffuse_reflectance = Texture(text)
    img = render(material, uv, level_weights, light)
    loss = (img - target).pow(2).sum()
    loss.backward()
    optimizer.step()
    if t % 10 == 0:
        print(f"iter {t}: loss {loss.item():.4f}")

print("texel error:", (text.detach() - gt_texels).abs().mean().item())
