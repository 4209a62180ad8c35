# graphdeco-inria/gaussian-splatting PR #828 "fix gradient missing during densify&prune"
# https://github.com/graphdeco-inria/gaussian-splatting/pull/828
# In train.py, loss.backward() runs first, then densify_and_prune(), then
# gaussians.optimizer.step(). densify_and_prune() rebuilds every Gaussian
# attribute as a brand-new nn.Parameter (torch.cat of the old parameter and the
# cloned points) in cat_tensors_to_optimizer(). The new leaf has no .grad, so
# right after densification the reporter saw the gaussian parameters' grad
# become None, and the optimizer.step() of that iteration skips them: the old
# Gaussians are not moved away from their clones, contrary to the paper.
# Fix in the PR: carry the existing gradient over to the new parameter (old
# grads kept, zeros for the new Gaussians) when the parameter is rebuilt.
# The CUDA rasterizer is replaced by a tiny differentiable 2D splatting
# function; GaussianModel keeps 3DGS's names and layout for xyz/f_dc/opacity/scaling.
import torch
import torch.nn as nn

torch.manual_seed(0)
device = "cpu"


class GaussianModel:
    def __init__(self):
        self.scaling_activation = torch.exp
        self.opacity_activation = torch.sigmoid
        self._xyz = torch.empty(0)
        self._features_dc = torch.empty(0)
        self._opacity = torch.empty(0)
        self._scaling = torch.empty(0)
        self.optimizer = None
        self.percent_dense = 0.01

    @property
    def get_xyz(self):
        return self._xyz

    @property
    def get_scaling(self):
        return self.scaling_activation(self._scaling)

    @property
    def get_opacity(self):
        return self.opacity_activation(self._opacity)

    def create_from_pcd(self, n_points):
        self._xyz = nn.Parameter(torch.rand(n_points, 3, device=device).requires_grad_(True))
        self._features_dc = nn.Parameter(torch.rand(n_points, 1, 3, device=device).requires_grad_(True))
        self._opacity = nn.Parameter(torch.zeros(n_points, 1, device=device).requires_grad_(True))
        self._scaling = nn.Parameter(torch.full((n_points, 1), -2.0, device=device).requires_grad_(True))
        self.max_radii2D = torch.zeros((n_points), device=device)

    def training_setup(self, percent_dense):
        self.percent_dense = percent_dense
        self.xyz_gradient_accum = torch.zeros((self.get_xyz.shape[0], 1), device=device)
        self.denom = torch.zeros((self.get_xyz.shape[0], 1), device=device)
        l = [
            {'params': [self._xyz], 'lr': 0.00016, "name": "xyz"},
            {'params': [self._features_dc], 'lr': 0.0025, "name": "f_dc"},
            {'params': [self._opacity], 'lr': 0.025, "name": "opacity"},
            {'params': [self._scaling], 'lr': 0.005, "name": "scaling"},
        ]
        self.optimizer = torch.optim.Adam(l, lr=0.0, eps=1e-15)

    def cat_tensors_to_optimizer(self, tensors_dict):
        optimizable_tensors = {}
        for group in self.optimizer.param_groups:
            assert len(group["params"]) == 1
            extension_tensor = tensors_dict[group["name"]]
            stored_state = self.optimizer.state.get(group['params'][0], None)
            if stored_state is not None:

                stored_state["exp_avg"] = torch.cat((stored_state["exp_avg"], torch.zeros_like(extension_tensor)), dim=0)
                stored_state["exp_avg_sq"] = torch.cat((stored_state["exp_avg_sq"], torch.zeros_like(extension_tensor)), dim=0)

                del self.optimizer.state[group['params'][0]]
                group["params"][0] = nn.Parameter(torch.cat((group["params"][0], extension_tensor), dim=0).requires_grad_(True))  # <- new_parameter
                self.optimizer.state[group['params'][0]] = stored_state

                optimizable_tensors[group["name"]] = group["params"][0]

        return optimizable_tensors

    def densification_postfix(self, new_xyz, new_features_dc, new_opacities, new_scaling):
        d = {"xyz": new_xyz,
             "f_dc": new_features_dc,
             "opacity": new_opacities,
             "scaling": new_scaling}

        optimizable_tensors = self.cat_tensors_to_optimizer(d)
        self._xyz = optimizable_tensors["xyz"]
        self._features_dc = optimizable_tensors["f_dc"]
        self._opacity = optimizable_tensors["opacity"]
        self._scaling = optimizable_tensors["scaling"]

        self.xyz_gradient_accum = torch.zeros((self.get_xyz.shape[0], 1), device=device)
        self.denom = torch.zeros((self.get_xyz.shape[0], 1), device=device)
        self.max_radii2D = torch.zeros((self.get_xyz.shape[0]), device=device)

    def densify_and_clone(self, grads, grad_threshold, scene_extent):
        # Extract points that satisfy the gradient condition
        selected_pts_mask = torch.where(torch.norm(grads, dim=-1) >= grad_threshold, True, False)
        selected_pts_mask = torch.logical_and(selected_pts_mask,
                                              torch.max(self.get_scaling, dim=1).values <= self.percent_dense * scene_extent)

        new_xyz = self._xyz[selected_pts_mask]
        new_features_dc = self._features_dc[selected_pts_mask]
        new_opacities = self._opacity[selected_pts_mask]
        new_scaling = self._scaling[selected_pts_mask]

        self.densification_postfix(new_xyz, new_features_dc, new_opacities, new_scaling)

    def densify_and_prune(self, max_grad, min_opacity, extent, max_screen_size):
        grads = self.xyz_gradient_accum / self.denom
        grads[grads.isnan()] = 0.0

        self.densify_and_clone(grads, max_grad, extent)

    def add_densification_stats(self, viewspace_point_tensor, update_filter):
        self.xyz_gradient_accum[update_filter] += torch.norm(viewspace_point_tensor.grad[update_filter, :2], dim=-1, keepdim=True)
        self.denom[update_filter] += 1


def render(viewpoint_camera, pc: GaussianModel):
    # stand-in for diff_gaussian_rasterization: isotropic 2D splats on an HxW grid
    screenspace_points = torch.zeros_like(pc.get_xyz, dtype=pc.get_xyz.dtype, requires_grad=True) + 0
    screenspace_points.retain_grad()
    means2D = (pc.get_xyz + screenspace_points)[:, :2]
    H, W = viewpoint_camera["image_height"], viewpoint_camera["image_width"]
    ys, xs = torch.meshgrid(torch.linspace(0, 1, H), torch.linspace(0, 1, W), indexing="ij")
    pix = torch.stack([xs, ys], dim=-1).reshape(-1, 1, 2)
    d2 = ((pix - means2D[None]) ** 2).sum(-1)
    w = pc.get_opacity[:, 0][None] * torch.exp(-0.5 * d2 / pc.get_scaling[:, 0][None] ** 2)
    image = (w @ pc._features_dc[:, 0, :]).reshape(H, W, 3).permute(2, 0, 1)
    radii = torch.full((pc.get_xyz.shape[0],), 3, dtype=torch.int32)
    return {"render": image, "viewspace_points": screenspace_points,
            "visibility_filter": radii > 0, "radii": radii}


def l1_loss(network_output, gt):
    return torch.abs((network_output - gt)).mean()


gaussians = GaussianModel()
gaussians.create_from_pcd(16)
gaussians.training_setup(percent_dense=0.01)
viewpoint_cam = {"image_height": 8, "image_width": 8}
gt_image = torch.rand(3, 8, 8)
densification_interval = 3
cameras_extent = 20.0

for iteration in range(1, 5):
    render_pkg = render(viewpoint_cam, gaussians)
    image, viewspace_point_tensor, visibility_filter, radii = render_pkg["render"], render_pkg["viewspace_points"], render_pkg["visibility_filter"], render_pkg["radii"]
    loss = l1_loss(image, gt_image)
    loss.backward()

    with torch.no_grad():
        gaussians.max_radii2D[visibility_filter] = torch.max(gaussians.max_radii2D[visibility_filter], radii[visibility_filter])
        gaussians.add_densification_stats(viewspace_point_tensor, visibility_filter)

        if iteration % densification_interval == 0:
            gaussians.densify_and_prune(0.0, 0.005, cameras_extent, None)
            print("num gaussians:", gaussians.get_xyz.shape[0])
            print("xyz grad after densify_and_prune:", gaussians._xyz.grad)

        gaussians.optimizer.step()
        gaussians.optimizer.zero_grad(set_to_none=True)
