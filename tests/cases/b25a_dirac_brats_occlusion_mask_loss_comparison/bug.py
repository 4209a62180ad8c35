"""DIRAC (cwmok/DIRAC) issue #13 "Mask loss ("OCC") cannot be backpropagated",
https://github.com/cwmok/DIRAC/issues/13: in Code/BRATS_train_DIRAC.py (bidirectional deformable registration of
pre-/post-operative BraTS MRI) the occlusion masks are built with a comparison,
`occ_xy = (smo_norm_diff_fw > thresh_fw).float()`, and the mask loss is `loss_occ = torch.mean(occ_xy) +
torch.mean(occ_yx)`. The reporter showed `print(loss_multiNCC.requires_grad, loss_occ.requires_grad)` gives
`True, False`: ">" is not differentiable, so the `occ * loss_occ` term of the total loss is a constant that
trains nothing ("operates as a random number generator within the overall loss"). The author confirmed and
replaced the term by a hinge on the same margin, `F.relu(smo_norm_diff_fw - thresh_fw) * 1000.` (and bw).
At run time the registration network still learns from the NCC, inverse-consistency and smoothness terms; only the
mask term carries no gradient to it.
Fix (line numbers kept): compute loss_occ from the hinge `F.relu(smo_norm_diff - thresh) * 1000.` as the author did;
the hard masks stay as they were for weighting the NCC and inverse-consistency terms. The registration network
(Miccai2021_LDR_laplacian_unit_disp_add_AdaIn_lvl3), SpatialTransform_unit, smoothloss, multi_resolution_NCC_weight
and generate_grid_unit are short stand-ins; volumes are 8x8x8 random tensors instead of BraTS scans.
"""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


# --- Functions.generate_grid_unit / bratsreg_model_stage stand-ins -------------------------------
def generate_grid_unit(imgshape):
    x = np.linspace(-1, 1, imgshape[0])
    y = np.linspace(-1, 1, imgshape[1])
    z = np.linspace(-1, 1, imgshape[2])
    grid = np.meshgrid(z, y, x, indexing='ij')
    grid = np.stack(grid[::-1], axis=3).transpose(2, 1, 0, 3)
    return grid.astype(np.float32)


class SpatialTransform_unit(nn.Module):
    def forward(self, x, flow, sample_grid):
        sample_grid = sample_grid + flow
        return F.grid_sample(x, sample_grid, mode='bilinear', padding_mode="border", align_corners=True)


class Miccai2021_LDR_laplacian_unit_disp_add_AdaIn_lvl3(nn.Module):
    """Stand-in: a small conditional 3D CNN predicting a displacement field (in unit grid coordinates)."""

    def __init__(self, in_channel, n_classes, start_channel, imgshape, range_flow=0.4):
        super().__init__()
        self.range_flow = range_flow
        self.imgshape = imgshape
        self.enc = nn.Sequential(nn.Conv3d(in_channel, start_channel * 2, 3, padding=1), nn.LeakyReLU(0.2))
        self.cond = nn.Linear(1, start_channel * 2)      # AdaIn-style conditioning on reg_code
        self.out = nn.Conv3d(start_channel * 2, n_classes, 3, padding=1)
        self.transform = SpatialTransform_unit()
        self.grid_1 = torch.from_numpy(np.reshape(generate_grid_unit(imgshape), (1,) + imgshape + (3,)))

    def forward(self, x, y, reg_code):
        feat = self.enc(torch.cat([x, y], dim=1))
        feat = feat * (1. + self.cond(reg_code).view(1, -1, 1, 1, 1))
        disp = torch.tanh(self.out(feat)) * self.range_flow
        warpped_x = self.transform(x, disp.permute(0, 2, 3, 4, 1), self.grid_1)
        return disp, warpped_x, y, disp, disp, disp, feat


def smoothloss(y_pred):
    d2, h2, w2 = y_pred.shape[-3:]
    dy = torch.abs(y_pred[:, :, 1:, :, :] - y_pred[:, :, :-1, :, :]) / 2 * d2
    dx = torch.abs(y_pred[:, :, :, 1:, :] - y_pred[:, :, :, :-1, :]) / 2 * h2
    dz = torch.abs(y_pred[:, :, :, :, 1:] - y_pred[:, :, :, :, :-1]) / 2 * w2
    return (torch.mean(dx * dx) + torch.mean(dy * dy) + torch.mean(dz * dz)) / 3.0


class multi_resolution_NCC_weight(nn.Module):
    """Stand-in: masked global NCC (the repo's is a windowed NCC at 3 scales)."""

    def __init__(self, win=7, scale=3):
        super().__init__()

    def forward(self, I, J, mask):
        I, J = I * mask, J * mask
        I_m, J_m = I - I.mean(), J - J.mean()
        cc = (I_m * J_m).sum() / torch.sqrt((I_m * I_m).sum() * (J_m * J_m).sum() + 1e-5)
        return -cc


# --- Code/BRATS_train_DIRAC.py, train() (one level, the loss exactly as in the repo) --------------
imgshape = (10, 10, 10)
start_channel, range_flow, lr = 4, 1.0, 1e-3
occ, inv_con = 0.01, 0.1


def train(iteration_lvl3):
    model = Miccai2021_LDR_laplacian_unit_disp_add_AdaIn_lvl3(2, 3, start_channel, imgshape=imgshape,
                                                              range_flow=range_flow)
    loss_similarity = multi_resolution_NCC_weight(win=7, scale=3)
    loss_smooth = smoothloss
    transform = SpatialTransform_unit()

    grid_unit = generate_grid_unit(imgshape)
    grid_unit = torch.from_numpy(np.reshape(grid_unit, (1,) + grid_unit.shape)).float()

    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    step = 0
    while step <= iteration_lvl3:
        X = torch.rand(1, 1, *imgshape) * 0.2        # pre-operative scan stand-in
        Y = X.clone()                                 # follow-up scan: same anatomy ...
        Y[..., :5, :5, :5] += 0.8                     # ... plus a bright post-operative region

        reg_code = torch.rand(1, dtype=X.dtype, device=X.device).unsqueeze(dim=0)

        F_X_Y, X_Y, Y_4x, F_xy, F_xy_lvl1, F_xy_lvl2, _ = model(X, Y, reg_code)
        F_Y_X, Y_X, X_4x, F_yx, F_yx_lvl1, F_yx_lvl2, _ = model(Y, X, reg_code)

        F_X_Y_warpped = transform(F_X_Y, F_Y_X.permute(0, 2, 3, 4, 1), grid_unit)
        F_Y_X_warpped = transform(F_Y_X, F_X_Y.permute(0, 2, 3, 4, 1), grid_unit)

        diff_fw = F_X_Y + F_Y_X_warpped  # Y
        diff_bw = F_Y_X + F_X_Y_warpped  # X

        fw_mask = (Y_4x > 0).float()
        bw_mask = (X_4x > 0).float()

        u_diff_fw = torch.sum(torch.norm(diff_fw * fw_mask, dim=1, keepdim=True)) / torch.sum(fw_mask)
        u_diff_bw = torch.sum(torch.norm(diff_bw * bw_mask, dim=1, keepdim=True)) / torch.sum(bw_mask)

        thresh_fw = (u_diff_fw + 0.015) * torch.ones_like(Y_4x, device=Y_4x.device)
        thresh_bw = (u_diff_bw + 0.015) * torch.ones_like(X_4x, device=X_4x.device)

        # smoothing
        norm_diff_fw = torch.norm(diff_fw, dim=1, keepdim=True)
        norm_diff_bw = torch.norm(diff_bw, dim=1, keepdim=True)

        smo_norm_diff_fw = F.avg_pool3d(F.avg_pool3d(norm_diff_fw, kernel_size=5, stride=1, padding=2),
                                        kernel_size=5, stride=1, padding=2)
        smo_norm_diff_bw = F.avg_pool3d(F.avg_pool3d(norm_diff_bw, kernel_size=5, stride=1, padding=2),
                                        kernel_size=5, stride=1, padding=2)

        occ_xy = (smo_norm_diff_fw > thresh_fw).float()  # y mask
        occ_yx = (smo_norm_diff_bw > thresh_bw).float()  # x mask

        # mask occ
        occ_xy = occ_xy * fw_mask
        occ_yx = occ_yx * bw_mask

        mask_xy = 1. - occ_xy
        mask_yx = 1. - occ_yx

        # 3 level deep supervision NCC
        loss_multiNCC = loss_similarity(X_Y, Y_4x, mask_xy) + loss_similarity(Y_X, X_4x, mask_yx)

        loss_inverse = torch.mean(norm_diff_fw * mask_xy) + torch.mean(norm_diff_bw * mask_yx)
        loss_occ = torch.mean(occ_xy) + torch.mean(occ_yx)  # <- cut_term

        # reg2 - use velocity
        _, _, x, y, z = F_X_Y.shape
        norm_vector = torch.zeros((1, 3, 1, 1, 1), dtype=F_X_Y.dtype, device=F_X_Y.device)
        norm_vector[0, 0, 0, 0, 0] = z
        norm_vector[0, 1, 0, 0, 0] = y
        norm_vector[0, 2, 0, 0, 0] = x
        loss_regulation = loss_smooth(F_X_Y * norm_vector) + loss_smooth(F_Y_X * norm_vector)

        loss = (1. - reg_code) * loss_multiNCC + reg_code * loss_regulation + occ * loss_occ + inv_con * loss_inverse

        optimizer.zero_grad()  # clear gradients for this training step
        loss.backward()  # backpropagation, compute gradients
        optimizer.step()  # apply gradients

        print('step "{0}" -> training loss "{1:.4f}" -sim_NCC "{2:4f}" -inv "{3:.4f}" -occ "{4:4f}" -smo "{5:.4f}"'.format(
            step, loss.item(), loss_multiNCC.item(), loss_inverse.item(), loss_occ.item(), loss_regulation.item()))
        step += 1
    print("loss_multiNCC.requires_grad, loss_occ.requires_grad:", loss_multiNCC.requires_grad, loss_occ.requires_grad)


torch.manual_seed(0)
torch.set_num_threads(1)
train(3)
