# Report: nkolot/GraphCMR issue #19 "There is a dangerous inplace operation in SMPL()"
# https://github.com/nkolot/GraphCMR/issues/19
# models/smpl.py builds the global joint transforms of the kinematic chain by
# writing each joint's transform into G in place:
#     G[:,i,:,:] = torch.matmul(G[:,self.parent[i-1],:,:], G_[:, i, :, :])
# matmul saved the slice G[:, parent] for backward; the next write into G bumps
# its version, so backward through the SMPL layer raises "one of the variables
# needed for gradient computation has been modified by an inplace operation".
# Fix (the repository's models/smpl.py after the issue): collect the transforms
# in a Python list and torch.stack them, no in-place write.
# Tiny random SMPL buffers (30 vertices) stand in for the real model file.
import torch
import torch.nn as nn

torch.manual_seed(0)

NV = 30  # 6890 in the real SMPL model
SMPL_PARENTS = [-1, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 9, 9, 12, 13, 14, 16, 17, 18, 19, 20, 21]


class SMPL(nn.Module):

    def __init__(self):
        super(SMPL, self).__init__()
        self.register_buffer('J_regressor', torch.softmax(torch.randn(24, NV), dim=1))
        self.register_buffer('weights', torch.softmax(torch.randn(NV, 24), dim=1))
        self.register_buffer('posedirs', 0.01 * torch.randn(NV, 3, 207))
        self.register_buffer('v_template', torch.randn(NV, 3))
        self.register_buffer('shapedirs', 0.01 * torch.randn(NV, 3, 10))
        self.register_buffer('parent', torch.LongTensor(SMPL_PARENTS[1:]))

    def forward(self, pose, beta):
        device = pose.device
        batch_size = pose.shape[0]
        v_template = self.v_template[None, :]
        shapedirs = self.shapedirs.view(-1, 10)[None, :].expand(batch_size, -1, -1)
        beta = beta[:, :, None]
        v_shaped = torch.matmul(shapedirs, beta).view(-1, NV, 3) + v_template
        J = []
        for i in range(batch_size):
            J.append(torch.matmul(self.J_regressor, v_shaped[i]))
        J = torch.stack(J, dim=0)
        # input it rotmat: (bs,24,3,3)
        R = pose
        I_cube = torch.eye(3)[None, None, :].to(device)
        lrotmin = (R[:, 1:, :] - I_cube).view(batch_size, -1)
        posedirs = self.posedirs.view(-1, 207)[None, :].expand(batch_size, -1, -1)
        v_posed = v_shaped + torch.matmul(posedirs, lrotmin[:, :, None]).view(-1, NV, 3)
        J_ = J.clone()
        J_[:, 1:, :] = J[:, 1:, :] - J[:, self.parent, :]
        G_ = torch.cat([R, J_[:, :, :, None]], dim=-1)
        pad_row = torch.FloatTensor([0, 0, 0, 1]).to(device).view(1, 1, 1, 4).expand(batch_size, 24, -1, -1)
        G_ = torch.cat([G_, pad_row], dim=2)
        G = [G_[:, 0].clone()]
        for i in range(1, 24):
            G.append(torch.matmul(G[self.parent[i-1]], G_[:, i, :, :]))
        G = torch.stack(G, dim=1)

        rest = torch.cat([J, torch.zeros(batch_size, 24, 1).to(device)], dim=2).view(batch_size, 24, 4, 1)
        zeros = torch.zeros(batch_size, 24, 4, 3).to(device)
        rest = torch.cat([zeros, rest], dim=-1)
        rest = torch.matmul(G, rest)
        G = G - rest
        T = torch.matmul(self.weights, G.permute(1, 0, 2, 3).contiguous().view(24, -1)).view(NV, batch_size, 4, 4).transpose(0, 1)
        rest_shape_h = torch.cat([v_posed, torch.ones_like(v_posed)[:, :, [0]]], dim=-1)
        v = torch.matmul(T, rest_shape_h[:, :, :, None])[:, :, :3, 0]
        return v


# the reporter's test code
device = 'cpu'
pred_theta = torch.ones([1, 24, 3, 3], requires_grad=True).to(device)
pred_beta = torch.ones([1, 10], requires_grad=True).to(device)
smpl = SMPL().to(device)

pred_vertices = smpl(pred_theta, pred_beta)

torch.sum(pred_vertices).backward()
print("pred_theta.grad:", pred_theta.grad.abs().sum().item(), "pred_beta.grad:", pred_beta.grad.abs().sum().item())
