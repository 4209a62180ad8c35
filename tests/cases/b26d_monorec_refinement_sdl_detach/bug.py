"""MonoRec (Brummi/MonoRec) issue #27 "problem regarding depth_refinement_loss",
https://github.com/Brummi/MonoRec/issues/27: in model/loss_functions/monorec_loss.py, depth_refinement_loss
computes the sparse depth loss of the monocular depth prediction as
`mono_sdl = mask_mean(mono_sparsedl.detach(), mono_sparsedl_mask)` (and the same for the stereo-distillation
term), so the sparse (ground-truth) depth term `sdl` is a constant: it is added to the loss with weight
2 * alpha * 4 but sends no gradient to the depth network, which is trained by the reprojection and smoothness
terms only, unlike the loss in the paper. The author confirmed it ("you seem to be correct here ... a mistake
when refactoring"). Fix: drop the .detach() inside mask_mean (the .detach() on the logged sums stays).
The MonoRec depth module, sparse_depth_loss, edge_aware_smoothness_loss, reprojection_loss and mask_mean are
short stand-ins (a one-frame horizontal warp replaces the multi-view reprojection); the data are random."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)


# --- utils / common_losses stand-ins ---------------------------------------------------------
def mask_mean(t, mask):
    keep = (~mask).to(t.dtype)
    return (t * keep).sum() / keep.sum().clamp_min(1)


def sparse_depth_loss(depth_prediction, depth_gt, l2=False, reduce=True):
    mask = depth_gt == 0
    diff = depth_prediction - depth_gt
    loss = diff ** 2 if l2 else diff.abs()
    if reduce:
        return mask_mean(loss, mask)
    return loss, mask


def edge_aware_smoothness_loss(depth_prediction, data_dict, reduce=True):
    img = data_dict["keyframe"]
    dx = (depth_prediction[..., :, 1:] - depth_prediction[..., :, :-1]).abs()
    wx = torch.exp(-(img[..., :, 1:] - img[..., :, :-1]).abs().mean(1, keepdim=True))
    smooth = F.pad(dx * wx, (0, 1))
    return smooth.mean() if reduce else smooth


def reprojection_loss(depth_prediction, data_dict, reduce=True, **kwargs):
    frame = data_dict["frames"][0]
    b, _, h, w = frame.shape
    ys, xs = torch.meshgrid(torch.linspace(-1, 1, h), torch.linspace(-1, 1, w), indexing="ij")
    grid = torch.stack((xs, ys), -1).expand(b, h, w, 2)
    grid = grid - torch.cat((depth_prediction.permute(0, 2, 3, 1) * 0.2, torch.zeros(b, h, w, 1)), -1)
    warped = F.grid_sample(frame, grid, align_corners=True)
    err = (warped - data_dict["keyframe"]).abs().mean(1)
    return err.mean() if reduce else err


# --- MonoRec depth module stand-in -------------------------------------------------------------
class MonoDepthNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 8, 3, padding=1), nn.ReLU())
        self.dec = nn.Conv2d(8, 1, 3, padding=1)

    def forward(self, keyframe):
        return [torch.sigmoid(self.dec(self.enc(keyframe)))]


# --- model/loss_functions/monorec_loss.py -----------------------------------------------------
def depth_refinement_loss(data_dict, alpha=None, roi=None, options=()):
    loss_dict = {}

    use_stereo = "stereo" in options
    use_mono_stereodl = not ("no_mono_stereodl" in options)

    depth_gt = data_dict["target"]
    mono_preds = data_dict["mono_pred"]
    if use_mono_stereodl:
        stereo_preds = data_dict["stereo_pred"]
    else:
        stereo_preds = len(mono_preds) * [None]
    cv_mask = data_dict["cv_mask"]

    cv_mask_discrete = (cv_mask > .5).to(dtype=torch.float32)
    ratio = cv_mask_discrete.sum() / cv_mask_discrete.numel()

    if alpha is None:
        alpha = 0.5

    loss = 0
    mono_sdl_sum = 0
    stereo_sdl_sum = 0
    sdl_sum = 0
    md2l_sum = 0

    for scale, (mono_pred, stereo_pred) in enumerate(zip(mono_preds, stereo_preds)):
        if use_mono_stereodl:
            stereo_pred = stereo_pred.detach()

        # Depth losses
        mono_sparsedl, mono_sparsedl_mask = sparse_depth_loss(mono_pred, depth_gt * (1 - cv_mask_discrete), l2=False, reduce=False)
        mono_sdl = mask_mean(mono_sparsedl.detach(), mono_sparsedl_mask)  # <- cut_term
        mono_sdl_sum += mono_sdl.detach()

        if use_mono_stereodl:
            mono_stereodl, mono_stereodl_mask = sparse_depth_loss(mono_pred, stereo_pred * cv_mask_discrete, l2=False, reduce=False)
            stereo_sdl = mask_mean(mono_stereodl.detach(), mono_stereodl_mask)
            stereo_sdl_sum += stereo_sdl.detach()
        else:
            stereo_sdl = 0

        sdl = mono_sdl * (1 - ratio) + stereo_sdl * ratio * 4
        sdl_sum += sdl
        loss_dict[f"sdl_{scale}"] = sdl

        # Smoothness loss
        smoothness = edge_aware_smoothness_loss(mono_pred, data_dict, reduce=True)

        # Reprojection losses
        mono_repr_l = reprojection_loss(mono_pred, data_dict, use_mono=True, use_stereo=use_stereo, reduce=False).unsqueeze(1)
        mono_mask = torch.isinf(mono_repr_l) | (cv_mask_discrete > .5)
        mono_repr_l = mask_mean(mono_repr_l, mono_mask)

        repr_l = mono_repr_l * (1 - ratio)
        md2l = repr_l + smoothness * 1e-3 / (2 ** scale)
        loss_dict[f"md2l_{scale}"] = md2l
        md2l_sum += md2l

    loss += 2 * alpha * 4 * sdl_sum + 2 * (1 - alpha) * md2l_sum
    loss_dict["loss"] = loss
    return loss_dict


torch.manual_seed(0)
model = MonoDepthNet()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
for step in range(4):
    keyframe = torch.rand(2, 3, 16, 16)
    depth_gt = torch.rand(2, 1, 16, 16) * (torch.rand(2, 1, 16, 16) > 0.8)  # sparse lidar-like depth
    data_dict = {
        "keyframe": keyframe,
        "frames": [torch.rand(2, 3, 16, 16)],
        "target": depth_gt,
        "cv_mask": torch.rand(2, 1, 16, 16) * 0.6,
    }
    data_dict["mono_pred"] = model(keyframe)
    loss_dict = depth_refinement_loss(data_dict, options=("no_mono_stereodl",))
    optimizer.zero_grad()
    loss_dict["loss"].backward()
    optimizer.step()

print("sparse depth term sdl_0:", round(loss_dict["sdl_0"].item(), 4))
print("sdl_0 carries a gradient to the depth network:", loss_dict["sdl_0"].requires_grad)
