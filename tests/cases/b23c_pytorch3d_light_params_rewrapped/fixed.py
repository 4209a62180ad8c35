"""PyTorch3D (facebookresearch/pytorch3d#831, https://github.com/facebookresearch/pytorch3d/issues/831):
"no gradients w.r.t. light object parameters". The user optimises a scene together with the light parameters
`lparams` (an nn.Parameter of 12 numbers) but after backward `lparams.grad` is None, while the mesh
parameters get their gradients.
Why: calcLights() passes the light properties as nested Python lists/tuples of 0-d tensors
(`location=[[-3+lparams[0], ...]]`). PointLights (TensorProperties) runs every argument through
convert_to_tensors_and_broadcast -> format_tensor, which calls torch.tensor(input) on anything that is not
already a tensor: the values are copied into a new tensor without autograd history, so the shading never
depends on lparams.
Fix: pass tensors built from lparams (torch.stack / slices), which format_tensor keeps as they are."""
import torch
from torch import nn

torch.manual_seed(0)
device = torch.device("cpu")


# ---- PyTorch3D stand-in: pytorch3d/renderer/utils.py + lighting.py, shaped like the library -------------
def format_tensor(input, dtype=torch.float32, device="cpu") -> torch.Tensor:
    if not torch.is_tensor(input):
        input = torch.tensor(input, dtype=dtype, device=device)
    if input.dim() == 0:
        input = input.view(1)
    return input


def convert_to_tensors_and_broadcast(*args, dtype=torch.float32, device="cpu"):
    args_1d = [format_tensor(c, dtype, device) for c in args]
    N = max(c.shape[0] for c in args_1d)
    return [c.expand(N, *c.shape[1:]) for c in args_1d]


class TensorProperties(nn.Module):
    def __init__(self, dtype=torch.float32, device="cpu", **kwargs):
        super().__init__()
        names = list(kwargs.keys())
        values = convert_to_tensors_and_broadcast(*kwargs.values(), dtype=dtype, device=device)
        for name, value in zip(names, values):
            setattr(self, name, value)


class PointLights(TensorProperties):
    def __init__(self, ambient_color=((0.5, 0.5, 0.5),), diffuse_color=((0.3, 0.3, 0.3),),
                 specular_color=((0.2, 0.2, 0.2),), location=((0, 1, 0),), device="cpu"):
        super().__init__(device=device, ambient_color=ambient_color, diffuse_color=diffuse_color,
                         specular_color=specular_color, location=location)

    def shade(self, points, normals, camera_position, shininess=10.0):
        light_dir = nn.functional.normalize(self.location[:, None] - points, dim=-1)
        cos = (normals * light_dir).sum(-1, keepdim=True)
        diffuse = self.diffuse_color[:, None] * torch.relu(cos)
        view_dir = nn.functional.normalize(camera_position - points, dim=-1)
        reflect = -light_dir + 2 * cos * normals
        spec = torch.relu((view_dir * reflect).sum(-1, keepdim=True)) ** shininess
        return self.ambient_color[:, None] + diffuse + self.specular_color[:, None] * spec


def render(verts, normals, lights, camera_position=torch.tensor([0.0, 0.0, 3.0])):
    """The MeshRenderer + SoftPhongShader in short: one shaded colour per vertex."""
    return lights.shade(verts[None], normals[None], camera_position)
# ---------------------------------------------------------------------------------------------------------


verts = torch.randn(64, 3)
normals = nn.functional.normalize(torch.randn(64, 3), dim=-1)
target = torch.rand(1, 64, 3)

lparams = torch.FloatTensor(12).uniform_(-0.05, 0.05)
lparams = nn.Parameter(lparams)
deform_verts = nn.Parameter(torch.zeros(64, 3))  # mesh parameters: "gradients of mesh works ok"


def calcLights():
    l = PointLights(device=device, location=torch.stack([-3 + lparams[0], 0 + lparams[1], 0 + lparams[2]])[None], ambient_color=(0.5 + lparams[3:6])[None], diffuse_color=(0.3 + lparams[6:9])[None], specular_color=(0.2 + lparams[9:12])[None])
    return l


optimizer = torch.optim.Adam([lparams, deform_verts], lr=0.01)
lparams_before = lparams.detach().clone()
for i in range(5):
    optimizer.zero_grad()
    lights = calcLights()
    image = render(verts + deform_verts, normals, lights)
    loss = ((image - target) ** 2).mean()
    loss.backward()
    optimizer.step()
    print(f"step {i} loss {loss.item():.5f}")

print("deform_verts.grad is None:", deform_verts.grad is None)
print("lparams.grad:", lparams.grad)
print("lparams changed:", not torch.equal(lparams_before, lparams.detach()))
