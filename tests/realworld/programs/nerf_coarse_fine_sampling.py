"""NeRF with hierarchical (coarse + fine) sampling, reduced from yenchenlin/nerf-pytorch
(https://github.com/yenchenlin/nerf-pytorch: run_nerf.py ``render_rays``/``raw2outputs``/``train``,
run_nerf_helpers.py ``Embedder``/``NeRF``/``sample_pdf``/``img2mse``/``mse2psnr``).

Patterns kept (each looks like a cut but is right):
- ``z_samples = sample_pdf(z_vals_mid, weights[..., 1:-1], ...)`` followed by ``z_samples =
  z_samples.detach()``: the importance-sampling positions are chosen from the coarse weights but must not
  backpropagate into the coarse network; the coarse network learns from its own ``img2mse(extras['rgb0'],
  target_s)`` term.
- inside ``sample_pdf``: ``torch.searchsorted`` and ``torch.gather`` on an index tensor produce integer
  indices; ``u`` comes from ``torch.rand`` / ``torch.linspace`` (data).
- ``z_vals, _ = torch.sort(torch.cat([z_vals, z_samples], -1), -1)``: sorting drops the indices only; the
  fine network is evaluated at the merged sample positions.
- ``torch.Tensor([1e10]).expand(dists[..., :1].shape)``: a constant last interval, not a parameter.
- the transmittance ``torch.cumprod(torch.cat([ones, 1. - alpha + 1e-10], -1), -1)[:, :-1]`` is
  differentiable end to end.
- the learning-rate decay writes ``param_group['lr'] = new_lrate`` each step, and
  ``grad_vars = list(model.parameters()) + list(model_fine.parameters())`` gives one optimizer both MLPs.
- ``psnr = mse2psnr(img_loss)`` is for logging only.
"""
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

img2mse = lambda x, y: torch.mean((x - y) ** 2)
mse2psnr = lambda x: -10. * torch.log(x) / torch.log(torch.Tensor([10.]))


class Embedder:
    def __init__(self, input_dims, multires):
        embed_fns, out_dim = [lambda x: x], input_dims
        freq_bands = 2. ** torch.linspace(0., multires - 1, steps=multires)
        for freq in freq_bands:
            for p_fn in [torch.sin, torch.cos]:
                embed_fns.append(lambda x, p_fn=p_fn, freq=freq: p_fn(x * freq))
                out_dim += input_dims
        self.embed_fns, self.out_dim = embed_fns, out_dim

    def embed(self, inputs):
        return torch.cat([fn(inputs) for fn in self.embed_fns], -1)


class NeRF(nn.Module):
    def __init__(self, D=3, W=32, input_ch=3, input_ch_views=3, skips=(1,)):
        super().__init__()
        self.input_ch, self.input_ch_views, self.skips = input_ch, input_ch_views, skips
        self.pts_linears = nn.ModuleList([nn.Linear(input_ch, W)] + [
            nn.Linear(W, W) if i not in skips else nn.Linear(W + input_ch, W) for i in range(D - 1)])
        self.views_linears = nn.ModuleList([nn.Linear(input_ch_views + W, W // 2)])
        self.feature_linear = nn.Linear(W, W)
        self.alpha_linear = nn.Linear(W, 1)
        self.rgb_linear = nn.Linear(W // 2, 3)

    def forward(self, x):
        input_pts, input_views = torch.split(x, [self.input_ch, self.input_ch_views], dim=-1)
        h = input_pts
        for i, l in enumerate(self.pts_linears):
            h = F.relu(self.pts_linears[i](h))
            if i in self.skips:
                h = torch.cat([input_pts, h], -1)
        alpha = self.alpha_linear(h)
        feature = self.feature_linear(h)
        h = torch.cat([feature, input_views], -1)
        for i, l in enumerate(self.views_linears):
            h = F.relu(self.views_linears[i](h))
        rgb = self.rgb_linear(h)
        return torch.cat([rgb, alpha], -1)


def sample_pdf(bins, weights, N_samples, det=False):
    weights = weights + 1e-5  # prevent nans
    pdf = weights / torch.sum(weights, -1, keepdim=True)
    cdf = torch.cumsum(pdf, -1)
    cdf = torch.cat([torch.zeros_like(cdf[..., :1]), cdf], -1)
    if det:
        u = torch.linspace(0., 1., steps=N_samples)
        u = u.expand(list(cdf.shape[:-1]) + [N_samples])
    else:
        u = torch.rand(list(cdf.shape[:-1]) + [N_samples])
    u = u.contiguous()
    inds = torch.searchsorted(cdf, u, right=True)
    below = torch.max(torch.zeros_like(inds - 1), inds - 1)
    above = torch.min((cdf.shape[-1] - 1) * torch.ones_like(inds), inds)
    inds_g = torch.stack([below, above], -1)
    matched_shape = [inds_g.shape[0], inds_g.shape[1], cdf.shape[-1]]
    cdf_g = torch.gather(cdf.unsqueeze(1).expand(matched_shape), 2, inds_g)
    bins_g = torch.gather(bins.unsqueeze(1).expand(matched_shape), 2, inds_g)
    denom = (cdf_g[..., 1] - cdf_g[..., 0])
    denom = torch.where(denom < 1e-5, torch.ones_like(denom), denom)
    t = (u - cdf_g[..., 0]) / denom
    return bins_g[..., 0] + t * (bins_g[..., 1] - bins_g[..., 0])


def raw2outputs(raw, z_vals, rays_d, raw_noise_std=0.):
    raw2alpha = lambda raw, dists, act_fn=F.relu: 1. - torch.exp(-act_fn(raw) * dists)
    dists = z_vals[..., 1:] - z_vals[..., :-1]
    dists = torch.cat([dists, torch.Tensor([1e10]).expand(dists[..., :1].shape)], -1)
    dists = dists * torch.norm(rays_d[..., None, :], dim=-1)
    rgb = torch.sigmoid(raw[..., :3])
    noise = torch.randn(raw[..., 3].shape) * raw_noise_std if raw_noise_std > 0. else 0.
    alpha = raw2alpha(raw[..., 3] + noise, dists)
    weights = alpha * torch.cumprod(torch.cat([torch.ones((alpha.shape[0], 1)), 1. - alpha + 1e-10], -1), -1)[:, :-1]
    rgb_map = torch.sum(weights[..., None] * rgb, -2)
    acc_map = torch.sum(weights, -1)
    rgb_map = rgb_map + (1. - acc_map[..., None])  # white background
    return rgb_map, weights


def run_network(inputs, viewdirs, fn, embed_fn, embeddirs_fn):
    inputs_flat = torch.reshape(inputs, [-1, inputs.shape[-1]])
    embedded = embed_fn(inputs_flat)
    input_dirs = viewdirs[:, None].expand(inputs.shape)
    embedded = torch.cat([embedded, embeddirs_fn(torch.reshape(input_dirs, [-1, input_dirs.shape[-1]]))], -1)
    outputs_flat = fn(embedded)
    return torch.reshape(outputs_flat, list(inputs.shape[:-1]) + [outputs_flat.shape[-1]])


def render_rays(rays_o, rays_d, near, far, network_fn, network_fine, embed_fn, embeddirs_fn,
                N_samples=16, N_importance=16, perturb=1., raw_noise_std=1.):
    N_rays = rays_o.shape[0]
    viewdirs = rays_d / torch.norm(rays_d, dim=-1, keepdim=True)
    t_vals = torch.linspace(0., 1., steps=N_samples)
    z_vals = near * (1. - t_vals) + far * t_vals
    z_vals = z_vals.expand([N_rays, N_samples])
    if perturb > 0.:
        mids = .5 * (z_vals[..., 1:] + z_vals[..., :-1])
        upper = torch.cat([mids, z_vals[..., -1:]], -1)
        lower = torch.cat([z_vals[..., :1], mids], -1)
        z_vals = lower + (upper - lower) * torch.rand(z_vals.shape)
    pts = rays_o[..., None, :] + rays_d[..., None, :] * z_vals[..., :, None]
    raw = run_network(pts, viewdirs, network_fn, embed_fn, embeddirs_fn)
    rgb_map, weights = raw2outputs(raw, z_vals, rays_d, raw_noise_std)
    rgb_map_0 = rgb_map

    z_vals_mid = .5 * (z_vals[..., 1:] + z_vals[..., :-1])
    z_samples = sample_pdf(z_vals_mid, weights[..., 1:-1], N_importance, det=(perturb == 0.))
    z_samples = z_samples.detach()
    z_vals, _ = torch.sort(torch.cat([z_vals, z_samples], -1), -1)
    pts = rays_o[..., None, :] + rays_d[..., None, :] * z_vals[..., :, None]
    raw = run_network(pts, viewdirs, network_fine, embed_fn, embeddirs_fn)
    rgb_map, weights = raw2outputs(raw, z_vals, rays_d, raw_noise_std)
    return {'rgb_map': rgb_map, 'rgb0': rgb_map_0}


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    np.random.seed(0)
    embedder, embedder_dirs = Embedder(3, 4), Embedder(3, 2)
    model = NeRF(input_ch=embedder.out_dim, input_ch_views=embedder_dirs.out_dim)
    model_fine = NeRF(input_ch=embedder.out_dim, input_ch_views=embedder_dirs.out_dim)
    grad_vars = list(model.parameters()) + list(model_fine.parameters())
    lrate, lrate_decay = 5e-3, 1
    optimizer = torch.optim.Adam(params=grad_vars, lr=lrate, betas=(0.9, 0.999))

    # a synthetic "image": rays from a pinhole at the origin looking down -z; colour depends on direction
    H = W = 8
    i, j = torch.meshgrid(torch.linspace(0, W - 1, W), torch.linspace(0, H - 1, H), indexing='xy')
    dirs = torch.stack([(i - W * .5) / W, -(j - H * .5) / H, -torch.ones_like(i)], -1).reshape(-1, 3)
    rays_o_all = torch.zeros_like(dirs)
    target_all = torch.stack([0.5 + 0.5 * dirs[:, 0], 0.5 + 0.5 * dirs[:, 1], torch.full_like(dirs[:, 0], 0.3)], -1)
    N_rand = 32
    for global_step in range(6):
        select = torch.randperm(H * W)[:N_rand]
        rays_o, rays_d, target_s = rays_o_all[select], dirs[select], target_all[select]
        extras = render_rays(rays_o, rays_d, 2., 6., model, model_fine, embedder.embed, embedder_dirs.embed)
        rgb = extras['rgb_map']
        optimizer.zero_grad()
        img_loss = img2mse(rgb, target_s)
        loss = img_loss
        psnr = mse2psnr(img_loss)
        if 'rgb0' in extras:
            img_loss0 = img2mse(extras['rgb0'], target_s)
            loss = loss + img_loss0
        loss.backward()
        optimizer.step()
        decay_rate = 0.1
        decay_steps = lrate_decay * 1000
        new_lrate = lrate * (decay_rate ** (global_step / decay_steps))
        for param_group in optimizer.param_groups:
            param_group['lr'] = new_lrate
        print(f"step {global_step} loss {loss.item():.6f} psnr {psnr.item():.3f}")
    if os.environ.get("REALWORLD_STATE"):
        torch.save({"network_fn_state_dict": model.state_dict(),
                    "network_fine_state_dict": model_fine.state_dict(),
                    "optimizer_state_dict": optimizer.state_dict()}, os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
