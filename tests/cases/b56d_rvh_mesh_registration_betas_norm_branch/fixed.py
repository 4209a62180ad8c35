# Betas values in results always be zero
# https://github.com/bharat-b7/RVH_Mesh_Registration/issues/8
# What went wrong: fitting SMPL(-H) to a scan, pose and trans were optimised but `betas` stayed 0.
# SMPL_Layer.forward (smplpytorch, smpl_layer.py L104) tests
#     `if th_betas is None or bool(torch.norm(th_betas) == 0):`
# and, when the betas are all zero (the fitter's initial value), uses the stored buffer
# `self.th_betas` instead of the passed-in parameter. The betas therefore never enter the data terms
# (s2m / m2s); only the betas prior touches them, whose gradient at 0 is 0 -> betas stay 0 forever.
# Fix (reporter's confirmation of a commenter's fix): change the test to `if th_betas is None:`.
# Reduced: a tiny random SMPL model (40 verts, 4 joints) built in-script instead of the .pkl,
# point_mesh_face_distance replaced by a point-to-point nearest distance, a Gaussian pose prior.
import numpy as np
import torch
import torch.nn as nn
from torch.nn import Module

torch.manual_seed(0)
np.random.seed(0)

NUM_VERTS, NUM_JOINTS, NUM_BETAS = 40, 4, 10
KINTREE_PARENTS = [-1, 0, 1, 1]


# ---- smplpytorch/pytorch/tensutils.py -------------------------------------------------------
def th_posemap_axisang(pose_vectors):
    rot_nb = int(pose_vectors.shape[1] / 3)
    rot_mats = []
    for joint_idx in range(rot_nb):
        axis_ang = pose_vectors[:, joint_idx * 3:(joint_idx + 1) * 3]
        rot_mat = batch_rodrigues(axis_ang)
        rot_mats.append(rot_mat)
    return torch.cat(rot_mats, 1)


def batch_rodrigues(axisang):
    angle = torch.norm(axisang + 1e-8, p=2, dim=1, keepdim=True)
    axis = axisang / angle
    c, s = torch.cos(angle), torch.sin(angle)
    x, y, z = axis[:, 0:1], axis[:, 1:2], axis[:, 2:3]
    zeros = torch.zeros_like(x)
    K = torch.cat([zeros, -z, y, z, zeros, -x, -y, x, zeros], 1).view(-1, 3, 3)
    eye = torch.eye(3).unsqueeze(0)
    R = eye + s.view(-1, 1, 1) * K + (1 - c).view(-1, 1, 1) * torch.bmm(K, K)
    return R.view(-1, 9)


def th_with_zeros(tensor):
    batch_size = tensor.shape[0]
    padding = tensor.new([0.0, 0.0, 0.0, 1.0])
    padding.requires_grad = False
    concat_list = [tensor, padding.view(1, 1, 4).repeat(batch_size, 1, 1)]
    return torch.cat(concat_list, 1)


def th_pack(tensor):
    batch_size = tensor.shape[0]
    padding = tensor.new_zeros((batch_size, 4, 3))
    padding.requires_grad = False
    return torch.cat([padding, tensor], 2)


def subtract_flat_id(rot_mats):
    rot_nb = int(rot_mats.shape[1] / 9)
    id_flat = torch.eye(3, dtype=rot_mats.dtype).view(1, 9).repeat(rot_mats.shape[0], rot_nb)
    return rot_mats - id_flat


def make_list(tensor):
    return tensor


# ---- smplpytorch/pytorch/smpl_layer.py ------------------------------------------------------
class SMPL_Layer(Module):
    def __init__(self, center_idx=None, gender='male', num_betas=NUM_BETAS):
        super().__init__()
        self.center_idx = center_idx
        self.gender = gender
        g = torch.Generator().manual_seed(1)
        self.register_buffer('th_betas', torch.zeros(1, num_betas))  # smpl_data['betas'] (mean shape)
        self.register_buffer('th_shapedirs', 0.05 * torch.randn(NUM_VERTS, 3, num_betas, generator=g))
        self.register_buffer('th_posedirs', 0.01 * torch.randn(NUM_VERTS, 3, (NUM_JOINTS - 1) * 9, generator=g))
        self.register_buffer('th_v_template', torch.randn(1, NUM_VERTS, 3, generator=g))
        self.register_buffer('th_J_regressor', torch.softmax(torch.randn(NUM_JOINTS, NUM_VERTS, generator=g), 1))
        self.register_buffer('th_weights', torch.softmax(torch.randn(NUM_VERTS, NUM_JOINTS, generator=g), 1))
        self.kintree_parents = KINTREE_PARENTS
        self.num_joints = NUM_JOINTS

    def forward(self, th_pose_axisang, th_betas=torch.zeros(1), th_trans=torch.zeros(1, 3), th_offsets=None):
        batch_size = th_pose_axisang.shape[0]
        th_pose_rotmat = th_posemap_axisang(th_pose_axisang)
        root_rot = th_pose_rotmat[:, :9].view(batch_size, 3, 3)
        th_pose_rotmat = th_pose_rotmat[:, 9:]
        th_pose_map = subtract_flat_id(th_pose_rotmat)

        # Below does: v_shaped = v_template + shapedirs * betas
        # If shape parameters are not provided
        if th_betas is None:
            th_v_shaped = self.th_v_template + torch.matmul(
                self.th_shapedirs, self.th_betas.transpose(1, 0)).permute(2, 0, 1)
            th_j = torch.matmul(self.th_J_regressor, th_v_shaped).repeat(batch_size, 1, 1)
        else:
            th_v_shaped = self.th_v_template + torch.matmul(self.th_shapedirs, th_betas.transpose(1, 0)).permute(2, 0, 1)
            th_j = torch.matmul(self.th_J_regressor, th_v_shaped)

        naked = th_v_shaped + torch.matmul(self.th_posedirs, th_pose_map.transpose(0, 1)).permute(2, 0, 1)
        th_v_posed = naked + th_offsets if th_offsets is not None else naked

        th_results = []
        root_j = th_j[:, 0, :].contiguous().view(batch_size, 3, 1)
        th_results.append(th_with_zeros(torch.cat([root_rot, root_j], 2)))
        for i in range(self.num_joints - 1):
            i_val = int(i + 1)
            joint_rot = th_pose_rotmat[:, (i_val - 1) * 9:i_val * 9].contiguous().view(batch_size, 3, 3)
            joint_j = th_j[:, i_val, :].contiguous().view(batch_size, 3, 1)
            parent = make_list(self.kintree_parents)[i_val]
            parent_j = th_j[:, parent, :].contiguous().view(batch_size, 3, 1)
            joint_rel_transform = th_with_zeros(torch.cat([joint_rot, joint_j - parent_j], 2))
            th_results.append(torch.matmul(th_results[parent], joint_rel_transform))
        th_results_global = th_results

        th_results2 = root_j.new_zeros((batch_size, 4, 4, self.num_joints))
        for i in range(self.num_joints):
            padd_zero = th_j.new_zeros(1)
            joint_j = torch.cat([th_j[:, i], padd_zero.view(1, 1).repeat(batch_size, 1)], 1)
            tmp = torch.bmm(th_results[i], joint_j.unsqueeze(2))
            th_results2[:, :, :, i] = th_results[i] - th_pack(tmp)

        th_T = torch.matmul(th_results2, self.th_weights.transpose(0, 1))
        th_rest_shape_h = torch.cat([th_v_posed.transpose(2, 1),
                                     th_T.new_ones((batch_size, 1, th_v_posed.shape[1]))], 1)
        th_verts = (th_T * th_rest_shape_h.unsqueeze(1)).sum(2).transpose(2, 1)
        th_verts = th_verts[:, :, :3]
        th_jtr = torch.stack(th_results_global, dim=1)[:, :, :3, 3]

        th_jtr = th_jtr + th_trans.unsqueeze(1)
        th_verts = th_verts + th_trans.unsqueeze(1)
        return th_verts, th_jtr, th_v_posed, naked


# ---- lib/smpl/wrapper_pytorch.py --------------------------------------------------------------
class SMPLPyTorchWrapperBatch(nn.Module):
    def __init__(self, batch_sz, betas=None, pose=None, trans=None, gender='male', num_betas=NUM_BETAS):
        super(SMPLPyTorchWrapperBatch, self).__init__()
        self.betas = nn.Parameter(torch.zeros(batch_sz, num_betas) if betas is None else betas)
        self.pose = nn.Parameter(torch.zeros(batch_sz, NUM_JOINTS * 3) if pose is None else pose)
        self.trans = nn.Parameter(torch.zeros(batch_sz, 3) if trans is None else trans)
        self.offsets = None
        self.gender = gender
        self.smpl = SMPL_Layer(center_idx=0, gender=gender, num_betas=num_betas)

    def forward(self):
        verts, jtr, tposed, naked = self.smpl(self.pose, th_betas=self.betas, th_trans=self.trans,
                                              th_offsets=self.offsets)
        return verts, jtr, tposed, naked


# ---- smpl_registration/fit_SMPLH.py -----------------------------------------------------------
def point_mesh_face_distance(src_pts, tgt_pts):
    # stand-in for pytorch3d.loss.point_mesh_face_distance: mean squared nearest-point distance
    d = torch.cdist(src_pts, tgt_pts) ** 2
    return d.min(dim=2).values.mean()


def get_prior(gender):
    return lambda pose: (pose ** 2).sum(dim=1)


def get_loss_weights():
    loss_weight = {'s2m': lambda cst, it: 10. ** 2 * cst * (1 + it),
                   'm2s': lambda cst, it: 10. ** 2 * cst / (1 + it),
                   'betas': lambda cst, it: 10. ** 0 * cst / (1 + it),
                   'pose_pr': lambda cst, it: 10. ** -5 * cst / (1 + it)}
    return loss_weight


def forward_step(scan_verts, smpl):
    prior = get_prior(smpl.gender)
    verts, _, _, _ = smpl()
    loss = dict()
    loss['s2m'] = point_mesh_face_distance(scan_verts, verts)
    loss['m2s'] = point_mesh_face_distance(verts, scan_verts)
    loss['betas'] = torch.mean(smpl.betas ** 2, axis=1).mean()
    loss['pose_pr'] = prior(smpl.pose).mean()
    return loss


def backward_step(loss_dict, weight_dict, it):
    w_loss = dict()
    for k in loss_dict:
        w_loss[k] = weight_dict[k](loss_dict[k], it)
    tot_loss = torch.stack(list(w_loss.values())).sum()
    return tot_loss


def optimize_pose_shape(scan_verts, smpl, iterations, steps_per_iter):
    optimizer = torch.optim.Adam([smpl.trans, smpl.betas, smpl.pose], 0.02, betas=(0.9, 0.999))
    weight_dict = get_loss_weights()
    for it in range(iterations):
        for i in range(steps_per_iter):
            optimizer.zero_grad()
            loss_dict = forward_step(scan_verts, smpl)
            tot_loss = backward_step(loss_dict, weight_dict, it)
            tot_loss.backward()
            if it == 0 and i == 0:
                print('betas.grad abs sum:', smpl.betas.grad.abs().sum().item())
                print('trans.grad abs sum:', smpl.trans.grad.abs().sum().item())
            optimizer.step()
    print('** Optimised smpl pose and shape **')


if __name__ == '__main__':
    batch_sz = 1
    # target "scan": the same model with a non-zero shape and a small pose
    with torch.no_grad():
        gt = SMPLPyTorchWrapperBatch(batch_sz, betas=torch.randn(batch_sz, NUM_BETAS),
                                     pose=0.2 * torch.randn(batch_sz, NUM_JOINTS * 3),
                                     trans=0.1 * torch.randn(batch_sz, 3))
        scan_verts = gt()[0]

    betas, pose, trans = torch.zeros((batch_sz, NUM_BETAS)), torch.zeros((batch_sz, NUM_JOINTS * 3)), torch.zeros((batch_sz, 3))
    smpl = SMPLPyTorchWrapperBatch(batch_sz, betas, pose, trans)
    optimize_pose_shape(scan_verts, smpl, iterations=2, steps_per_iter=15)
    print('final betas:', smpl.betas.detach().numpy().round(3))
