"""nerfstudio depth-nerfacto (nerfstudio-project/nerfstudio#2852, https://github.com/nerfstudio-project/nerfstudio/pull/2852,
with #2851 and #3334): "In direct depth supervision methods, calling `depth_loss` will not work unless we can
compute gradients on the predicted depth. The predicted depth right now is a median and there are no gradients".
With depth_loss_type URF, the expected-depth term (termination_depth - predicted_depth)**2 never trains the
field: only the RGB loss and the line-of-sight terms do.
Why: DepthNerfactoModel.get_metrics_dict passes predicted_depth=outputs["depth"]. In nerfacto that output is
the *median* depth (searchsorted on the accumulated weights, then a gather of the sample positions), and it is
computed under torch.no_grad(): it carries no gradient to the density field, so the expected-depth part of the
URF loss is a constant while the other loss terms still train the same weights.
Fix (the PR's): pass predicted_depth=outputs["expected_depth"], the differentiable weighted mean depth."""
from dataclasses import dataclass
from enum import Enum

import torch
from torch import nn

torch.manual_seed(0)


# ---- nerfstudio stand-in: renderers.py, losses.py, models/nerfacto.py, shaped like the library ----------
class DepthLossType(Enum):
    DS_NERF = 1
    URF = 2


URF_SIGMA_SCALE_FACTOR = 3.0


@dataclass
class RaySamples:
    starts: torch.Tensor  # [rays, samples, 1]; samplers return positions without autograd history
    ends: torch.Tensor

    def get_weights(self, densities):
        delta_density = (self.ends - self.starts) * densities
        alphas = 1 - torch.exp(-delta_density)
        transmittance = torch.cumsum(delta_density[..., :-1, :], dim=-2)
        transmittance = torch.cat([torch.zeros_like(transmittance[..., :1, :]), transmittance], dim=-2)
        return alphas * torch.exp(-transmittance)


class DepthRenderer(nn.Module):
    def __init__(self, method="median"):
        super().__init__()
        self.method = method

    def forward(self, weights, ray_samples):
        steps = (ray_samples.starts + ray_samples.ends) / 2
        if self.method == "median":
            cumulative_weights = torch.cumsum(weights[..., 0], dim=-1)
            split = torch.ones((*weights.shape[:-2], 1)) * 0.5
            median_index = torch.searchsorted(cumulative_weights, split, side="left")
            median_index = torch.clamp(median_index, 0, steps.shape[-2] - 1)
            return torch.gather(steps[..., 0], dim=-1, index=median_index)
        eps = 1e-10
        return torch.sum(weights * steps, dim=-2) / (torch.sum(weights, -2) + eps)  # "expected"


def urban_radiance_field_depth_loss(weights, termination_depth, predicted_depth, steps, sigma):
    depth_mask = termination_depth > 0
    expected_depth_loss = (termination_depth - predicted_depth) ** 2
    target_distribution = torch.distributions.normal.Normal(0.0, sigma / URF_SIGMA_SCALE_FACTOR)
    termination_depth = termination_depth[:, None]
    line_of_sight_loss_near_mask = torch.logical_and(
        steps <= termination_depth + sigma, steps >= termination_depth - sigma
    )
    line_of_sight_loss_near = (weights - torch.exp(target_distribution.log_prob(steps - termination_depth))) ** 2
    line_of_sight_loss_near = (line_of_sight_loss_near_mask * line_of_sight_loss_near).sum(-2)
    line_of_sight_loss_empty_mask = steps < termination_depth - sigma
    line_of_sight_loss_empty = (line_of_sight_loss_empty_mask * weights**2).sum(-2)
    line_of_sight_loss = line_of_sight_loss_near + line_of_sight_loss_empty
    loss = (expected_depth_loss + line_of_sight_loss) * depth_mask
    return torch.mean(loss)


def depth_loss(weights, ray_samples, termination_depth, predicted_depth, sigma, directions_norm, is_euclidean,
               depth_loss_type):
    if not is_euclidean:
        termination_depth = termination_depth * directions_norm
    steps = (ray_samples.starts + ray_samples.ends) / 2
    depth_loss.predicted_depth = predicted_depth  # kept only for the check at the end of this script
    if depth_loss_type == DepthLossType.URF:
        return urban_radiance_field_depth_loss(weights, termination_depth, predicted_depth, steps, sigma)
    raise NotImplementedError("Provided depth loss type not implemented.")


class NerfactoModel(nn.Module):
    def __init__(self, num_samples=32, near=2.0, far=6.0):
        super().__init__()
        self.field = nn.Sequential(nn.Linear(3, 32), nn.ReLU(), nn.Linear(32, 4))
        self.renderer_depth = DepthRenderer(method="median")
        self.renderer_expected_depth = DepthRenderer(method="expected")
        self.bins = torch.linspace(near, far, num_samples + 1)

    def get_outputs(self, ray_bundle):
        origins, directions = ray_bundle
        starts = self.bins[:-1].expand(origins.shape[0], -1)[..., None]
        ends = self.bins[1:].expand(origins.shape[0], -1)[..., None]
        ray_samples = RaySamples(starts=starts, ends=ends)
        positions = origins[:, None] + directions[:, None] * (starts + ends) / 2
        field_out = self.field(positions)
        density, rgb = nn.functional.softplus(field_out[..., :1]), torch.sigmoid(field_out[..., 1:])
        weights = ray_samples.get_weights(density)
        outputs = {"rgb": torch.sum(weights * rgb, dim=-2), "weights_list": [weights],
                   "ray_samples_list": [ray_samples]}
        with torch.no_grad():
            outputs["depth"] = self.renderer_depth(weights=weights, ray_samples=ray_samples)
        outputs["expected_depth"] = self.renderer_expected_depth(weights=weights, ray_samples=ray_samples)
        return outputs

    def get_metrics_dict(self, outputs, batch):
        return {}

    def get_loss_dict(self, outputs, batch, metrics_dict=None):
        return {"rgb_loss": nn.functional.mse_loss(outputs["rgb"], batch["image"])}
# ---------------------------------------------------------------------------------------------------------


class DepthNerfactoModel(NerfactoModel):
    """nerfstudio/models/depth_nerfacto.py as it was before the PR."""

    depth_loss_mult = 1e-3
    is_euclidean_depth = False
    depth_sigma = torch.tensor([0.01])
    depth_loss_type = DepthLossType.URF

    def get_outputs(self, ray_bundle):
        outputs = super().get_outputs(ray_bundle)
        outputs["directions_norm"] = torch.ones(ray_bundle[0].shape[0], 1)
        return outputs

    def get_metrics_dict(self, outputs, batch):
        metrics_dict = super().get_metrics_dict(outputs, batch)
        if self.training:
            metrics_dict["depth_loss"] = 0.0
            sigma = self.depth_sigma
            termination_depth = batch["depth_image"]
            for i in range(len(outputs["weights_list"])):
                metrics_dict["depth_loss"] += depth_loss(
                    weights=outputs["weights_list"][i],
                    ray_samples=outputs["ray_samples_list"][i],
                    termination_depth=termination_depth,
                    predicted_depth=outputs["depth"],  # <- cut_term
                    sigma=sigma,
                    directions_norm=outputs["directions_norm"],
                    is_euclidean=self.is_euclidean_depth,
                    depth_loss_type=self.depth_loss_type,
                ) / len(outputs["weights_list"])
        return metrics_dict

    def get_loss_dict(self, outputs, batch, metrics_dict=None):
        loss_dict = super().get_loss_dict(outputs, batch, metrics_dict)
        if self.training:
            assert metrics_dict is not None and "depth_loss" in metrics_dict
            loss_dict["depth_loss"] = self.depth_loss_mult * metrics_dict["depth_loss"]
        return loss_dict


model = DepthNerfactoModel().train()
optimizer = torch.optim.Adam(model.parameters(), lr=5e-3)
origins = torch.zeros(64, 3)
directions = nn.functional.normalize(torch.randn(64, 3) * 0.1 + torch.tensor([0.0, 0.0, 1.0]), dim=-1)
batch = {"image": torch.rand(64, 3), "depth_image": torch.rand(64, 1) * 3 + 2.5}

for step in range(5):
    outputs = model.get_outputs((origins, directions))
    metrics_dict = model.get_metrics_dict(outputs, batch)
    loss_dict = model.get_loss_dict(outputs, batch, metrics_dict)
    loss = sum(loss_dict.values())
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step} rgb_loss {loss_dict['rgb_loss'].item():.5f} depth_loss {loss_dict['depth_loss'].item():.6f}")

print("predicted_depth given to the URF depth loss carries a gradient:", depth_loss.predicted_depth.requires_grad)
