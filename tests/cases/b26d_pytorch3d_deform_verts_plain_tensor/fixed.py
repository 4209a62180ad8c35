"""PyTorch3D (facebookresearch/pytorch3d) issue #214 "How to propagate from renderer into meshes?",
https://github.com/facebookresearch/pytorch3d/issues/214: the user merged the "camera position optimization
with differentiable rendering" tutorial (a Model whose camera position is an nn.Parameter, trained with
Adam(model.parameters())) with the "deform source mesh" tutorial, creating the vertex offsets as
`deform_verts = torch.full(verts_packed().shape, 0.0, requires_grad=True)` and offsetting the mesh with it in
forward. "After building the model, I could not find the deform_verts in the params list": a plain tensor
stored on a Module is not registered, so model.parameters() never yields it, the optimizer never holds it and
the mesh never deforms although deform_verts.grad is filled at every backward (the maintainer pointed out the
gradient does reach deform_verts). Fix: register it, `self.deform_verts = nn.Parameter(torch.full(...))`.
pytorch3d's Meshes, look_at_rotation and the silhouette renderer are short stand-ins (a soft point splat)."""
import numpy as np
import torch
import torch.nn as nn

torch.set_num_threads(1)


# --- pytorch3d stand-ins -----------------------------------------------------------------------
class Meshes:
    def __init__(self, verts, faces):
        self._verts, self._faces = verts, faces

    def verts_packed(self):
        return self._verts[0]

    def offset_verts(self, vert_offsets_packed):
        return Meshes(self._verts + vert_offsets_packed[None], self._faces)


def look_at_rotation(camera_position, at=((0, 0, 0),), up=((0, 1, 0),)):
    at, up = torch.tensor(at, dtype=torch.float32), torch.tensor(up, dtype=torch.float32)
    z_axis = nn.functional.normalize(at - camera_position, eps=1e-5)
    x_axis = nn.functional.normalize(torch.cross(up, z_axis, dim=1), eps=1e-5)
    y_axis = nn.functional.normalize(torch.cross(z_axis, x_axis, dim=1), eps=1e-5)
    return torch.cat((x_axis[:, None, :], y_axis[:, None, :], z_axis[:, None, :]), dim=1).transpose(1, 2)


class SoftSilhouetteRenderer(nn.Module):
    def __init__(self, image_size=16, sigma=0.02, focal=2.0):
        super().__init__()
        self.image_size, self.sigma, self.focal = image_size, sigma, focal

    def forward(self, meshes_world, R, T):
        verts = meshes_world.verts_packed()
        view = verts @ R[0] + T[0]
        xy = self.focal * view[:, :2] / view[:, 2:3]
        lin = torch.linspace(-1, 1, self.image_size)
        ys, xs = torch.meshgrid(lin, lin, indexing="ij")
        pix = torch.stack((xs, ys), -1).reshape(-1, 1, 2)
        d2 = ((pix - xy[None]) ** 2).sum(-1)
        alpha = 1 - torch.prod(1 - torch.exp(-d2 / self.sigma), dim=1)
        alpha = alpha.reshape(1, self.image_size, self.image_size, 1)
        return torch.cat((torch.ones(1, self.image_size, self.image_size, 3), alpha), -1)


# --- the user's model ----------------------------------------------------------------------------
class Model(nn.Module):
    def __init__(self, meshes, renderer, image_ref):
        super().__init__()
        self.meshes = meshes
        self.renderer = renderer

        # Get the silhouette of the reference RGB image by finding all non-white pixel values.
        image_ref = torch.from_numpy((image_ref[..., :3].max(-1) != 1).astype(np.float32))
        self.register_buffer('image_ref', image_ref)

        # Create an optimizable parameter for the x, y, z position of the camera.
        self.camera_position = nn.Parameter(torch.from_numpy(np.array([0.5, 0.7, -3.0], dtype=np.float32)))

        # We will learn to deform the source mesh by offsetting its vertices
        self.deform_verts = nn.Parameter(torch.full(self.meshes.verts_packed().shape, 0.0))  # <- non_parameter_tensor

    def forward(self):
        R = look_at_rotation(self.camera_position[None, :])
        T = -torch.bmm(R.transpose(1, 2), self.camera_position[None, :, None])[:, :, 0]
        new_src_mesh = self.meshes.offset_verts(self.deform_verts)
        image = self.renderer(meshes_world=new_src_mesh, R=R, T=T)
        loss = torch.sum((image[..., 3] - self.image_ref) ** 2)
        return loss, image


torch.manual_seed(0)
verts = torch.randn(1, 40, 3) * 0.4
faces = torch.randint(0, 40, (1, 60, 3))
src_mesh = Meshes(verts=verts, faces=faces)
renderer = SoftSilhouetteRenderer()
with torch.no_grad():  # target view: the mesh stretched along x, seen from the reference camera
    cam = torch.tensor([[0.0, 0.0, -3.0]])
    R_ref = look_at_rotation(cam)
    T_ref = -torch.bmm(R_ref.transpose(1, 2), cam[:, :, None])[:, :, 0]
    target = renderer(Meshes(verts * torch.tensor([1.6, 1.0, 1.0]), faces), R=R_ref, T=T_ref)
image_ref = np.where(target[0, ..., 3:].numpy() > 0.5, 0.0, 1.0).repeat(3, -1)

model = Model(meshes=src_mesh, renderer=renderer, image_ref=image_ref)
optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
start = model.deform_verts.detach().clone()
for i in range(10):
    optimizer.zero_grad()
    loss, _ = model()
    loss.backward()
    optimizer.step()

print("deform_verts in model.parameters():", any(p is model.deform_verts for p in model.parameters()))
print("deform_verts.grad is None:", model.deform_verts.grad is None)
print("mesh deformed:", not torch.equal(start, model.deform_verts.detach()))
