# Report: "Can't use --optimize_ext with --ray_sampling_strategy same_image" -- kwea123/ngp_pl issue #100
# https://github.com/kwea123/ngp_pl/issues/100
# What went wrong: with extrinsic optimization on (--optimize_ext) and one image per batch
# (--ray_sampling_strategy same_image), training crashed on the second step with
# "RuntimeError: Trying to backward through the graph a second time ...".
# BaseDataset.__getitem__ returns a scalar image index (np.random.choice(...)[0]); in
# NeRFSystem.forward `poses = self.poses[batch['img_idxs']]` is then a *view* of the registered
# `poses` buffer, and the pose correction `poses[..., :3] = dR @ poses[..., :3]` /
# `poses[..., 3] += self.dT[...]` writes into the buffer itself. The buffer keeps the autograd
# history of step 1, so step 2's loss backpropagates into step 1's already-freed graph.
# With all_images (an index array) the indexing copies and nothing leaks.
# Fix (reporter, confirmed working): in datasets/base.py use
# `img_idxs = np.random.choice(len(self.poses), 1)` (an index array, so indexing copies).
# Plain-torch rewrite: Lightning (precision=16 -> CPU autocast), the NGP hash-grid model and the
# CUDA ray marcher are reduced to a tiny MLP and a fixed-step volume renderer with the same names.
import numpy as np
import torch
from torch import nn
from torch.utils.data import Dataset, DataLoader

torch.manual_seed(0)
np.random.seed(0)


# ---- datasets/ray_utils.py ----
def get_rays(directions, c2w):
    if c2w.ndim == 2:
        rays_d = directions @ c2w[:, :3].T
    else:
        rays_d = (directions[:, None, :] @ c2w[..., :3].transpose(-1, -2))[:, 0]
    rays_o = c2w[..., 3].expand_as(rays_d)
    return rays_o, rays_d


def axisangle_to_R(v):
    v_ndim = v.ndim
    if v_ndim == 1:
        v = v[None]
    zero = torch.zeros_like(v[:, :1])
    skew_v0 = torch.cat([zero, -v[:, 2:3], v[:, 1:2]], 1)
    skew_v1 = torch.cat([v[:, 2:3], zero, -v[:, 0:1]], 1)
    skew_v2 = torch.cat([-v[:, 1:2], v[:, 0:1], zero], 1)
    skew_v = torch.stack([skew_v0, skew_v1, skew_v2], dim=1)
    norm_v = (torch.norm(v, dim=1) + 1e-7)[:, None, None]
    eye = torch.eye(3, device=v.device)
    R = eye + (torch.sin(norm_v) / norm_v) * skew_v + \
        ((1 - torch.cos(norm_v)) / norm_v ** 2) * (skew_v @ skew_v)
    if v_ndim == 1:
        R = R[0]
    return R


# ---- datasets/base.py ----
class BaseDataset(Dataset):
    def __init__(self, split='train', n_images=4, img_wh=(8, 8)):
        self.split = split
        self.img_wh = img_wh
        self.poses = torch.cat([torch.eye(3).expand(n_images, 3, 3),
                                torch.randn(n_images, 3, 1) * 0.1 - torch.tensor([0., 0., 2.]).view(1, 3, 1)], -1)
        self.rays = torch.rand(n_images, img_wh[0] * img_wh[1], 3)
        u, v = torch.meshgrid(torch.arange(img_wh[0]), torch.arange(img_wh[1]), indexing='xy')
        self.directions = torch.stack([(u.reshape(-1) - img_wh[0] / 2 + 0.5) / img_wh[0],
                                       (v.reshape(-1) - img_wh[1] / 2 + 0.5) / img_wh[1],
                                       torch.ones(img_wh[0] * img_wh[1])], -1)

    def __len__(self):
        return 1000

    def __getitem__(self, idx):
        if self.ray_sampling_strategy == 'all_images':  # randomly select images
            img_idxs = np.random.choice(len(self.poses), self.batch_size)
        elif self.ray_sampling_strategy == 'same_image':  # randomly select ONE image
            img_idxs = np.random.choice(len(self.poses), 1)[0]  # <- autograd_error
        # randomly select pixels
        pix_idxs = np.random.choice(self.img_wh[0] * self.img_wh[1], self.batch_size)
        rays = self.rays[img_idxs, pix_idxs]
        sample = {'img_idxs': img_idxs, 'pix_idxs': pix_idxs, 'rgb': rays[:, :3]}
        return sample


# ---- models/networks.py + models/rendering.py (stand-ins) ----
class NGP(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(3, 32), nn.ReLU(), nn.Linear(32, 4))

    def forward(self, x):
        h = self.net(x)
        return torch.exp(h[..., 0].clamp(max=15)), torch.sigmoid(h[..., 1:])  # trunc_exp density


def render(model, rays_o, rays_d, n_samples=8):
    t = torch.linspace(1.0, 3.0, n_samples)
    xyz = rays_o[:, None, :] + rays_d[:, None, :] * t[None, :, None]
    sigmas, rgbs = model(xyz)
    alphas = 1 - torch.exp(-sigmas * (t[1] - t[0]))
    trans = torch.cumprod(torch.cat([torch.ones_like(alphas[:, :1]), 1 - alphas[:, :-1] + 1e-10], -1), -1)
    weights = alphas * trans
    return {'rgb': (weights[..., None] * rgbs).sum(1)}


# ---- train.py ----
class NeRFSystem(nn.Module):
    def __init__(self, hparams):
        super().__init__()
        self.hparams = hparams
        self.model = NGP()

    def forward(self, batch, split):
        if split == 'train':
            poses = self.poses[batch['img_idxs']]
            directions = self.directions[batch['pix_idxs']]
        else:
            poses = batch['pose']
            directions = self.directions

        if self.hparams['optimize_ext']:
            dR = axisangle_to_R(self.dR[batch['img_idxs']])
            poses[..., :3] = dR @ poses[..., :3]
            poses[..., 3] += self.dT[batch['img_idxs']]

        rays_o, rays_d = get_rays(directions, poses)
        return render(self.model, rays_o, rays_d)

    def setup(self):
        self.train_dataset = BaseDataset(split='train')
        self.train_dataset.batch_size = self.hparams['batch_size']
        self.train_dataset.ray_sampling_strategy = self.hparams['ray_sampling_strategy']

    def configure_optimizers(self):
        # define additional parameters
        self.register_buffer('directions', self.train_dataset.directions)
        self.register_buffer('poses', self.train_dataset.poses)

        if self.hparams['optimize_ext']:
            N = len(self.train_dataset.poses)
            self.register_parameter('dR', nn.Parameter(torch.zeros(N, 3)))
            self.register_parameter('dT', nn.Parameter(torch.zeros(N, 3)))

        net_params = []
        for n, p in self.named_parameters():
            if n not in ['dR', 'dT']:
                net_params += [p]

        opts = []
        self.net_opt = torch.optim.Adam(net_params, self.hparams['lr'], eps=1e-15)
        opts += [self.net_opt]
        if self.hparams['optimize_ext']:
            opts += [torch.optim.Adam([self.dR, self.dT], 1e-6)]
        return opts

    def train_dataloader(self):
        return DataLoader(self.train_dataset, num_workers=0, batch_size=None)

    def training_step(self, batch, batch_nb):
        with torch.autocast('cpu', dtype=torch.bfloat16):  # Trainer(precision=16)
            results = self(batch, split='train')
        loss = ((results['rgb'].float() - batch['rgb']) ** 2).mean()
        return loss


hparams = {'optimize_ext': True, 'ray_sampling_strategy': 'same_image',
           'batch_size': 16, 'lr': 1e-2}
system = NeRFSystem(hparams)
system.setup()
opts = system.configure_optimizers()

for batch_nb, batch in enumerate(system.train_dataloader()):
    if batch_nb == 3:
        break
    for opt in opts:
        opt.zero_grad()
    loss = system.training_step(batch, batch_nb)
    loss.backward()
    for opt in opts:
        opt.step()
    print(f"step {batch_nb}: loss {loss.item():.4f}  dT.grad norm {system.dT.grad.norm().item():.3e}")
