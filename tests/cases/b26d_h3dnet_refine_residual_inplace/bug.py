"""H3DNet (zaiweizhang/H3DNet) issue #29 "One inplace error",
https://github.com/zaiweizhang/H3DNet/issues/29: in models/proposal_module_refine.py the refinement head of
the point-cloud 3D detector adds the residual feature in place,
`net = F.relu(self.bn_refine1(self.conv_refine1(combine_feature)))` then `net += original_feature`. ReLU
saves its output for backward, so the in-place add bumps the version of a tensor autograd still needs and
loss.backward() raises "RuntimeError: one of the variables needed for gradient computation has been modified
by an inplace operation: ... output 0 of ReluBackward0". The reporter proposed `net = net + original_feature`,
and the maintainer applied it ("fixed. Thanks for the info!").
The backbone/voting stages, the surface and line matching and decode_scores are reduced to a few
layers of stand-in; point features are random."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)


class ProposalModuleRefine(nn.Module):
    def __init__(self, num_class, num_proposal, seed_feat_dim=32):
        super().__init__()
        self.num_class = num_class
        self.num_proposal = num_proposal
        # stand-in for the object proposal layers that make original_feature
        self.conv_proposal = nn.Conv1d(seed_feat_dim, 128, 1)
        self.bn_proposal = nn.BatchNorm1d(128)
        # surface / line primitive features
        self.conv_surface1 = nn.Conv1d(seed_feat_dim, 32, 1)
        self.bn_surface1 = nn.BatchNorm1d(32)
        self.conv_line1 = nn.Conv1d(seed_feat_dim, 32, 1)
        self.bn_line1 = nn.BatchNorm1d(32)
        # refinement head
        self.conv_refine1 = nn.Conv1d(64, 128, 1)
        self.conv_refine2 = nn.Conv1d(128, 128, 1)
        self.conv_refine3 = nn.Conv1d(128, 128, 1)
        self.conv_refine4 = nn.Conv1d(128, 2 + 3 + num_class, 1)
        self.bn_refine1 = nn.BatchNorm1d(128)
        self.bn_refine2 = nn.BatchNorm1d(128)
        self.bn_refine3 = nn.BatchNorm1d(128)

    def forward(self, features, surface_features, line_features):
        batch_size = features.shape[0]
        object_proposal = self.num_proposal
        original_feature = F.relu(self.bn_proposal(self.conv_proposal(features)))

        surface_features = F.relu(self.bn_surface1(self.conv_surface1(surface_features)))
        surface_features = surface_features.view(batch_size, -1, 6, object_proposal).contiguous()
        line_features = F.relu(self.bn_line1(self.conv_line1(line_features)))
        line_features = line_features.view(batch_size, -1, 12, object_proposal).contiguous()

        surface_pool_feature = F.max_pool2d(surface_features, (6, 1), stride=1).squeeze(2)
        line_pool_feature = F.max_pool2d(line_features, (12, 1), stride=1).squeeze(2)

        combine_feature = torch.cat((surface_pool_feature, line_pool_feature), dim=1)

        net = F.relu(self.bn_refine1(self.conv_refine1(combine_feature)))
        net += original_feature  ### Residual feature  # <- inplace_saved
        net = F.relu(self.bn_refine2(self.conv_refine2(net)))
        net = F.relu(self.bn_refine3(self.conv_refine3(net)))
        net = self.conv_refine4(net)  # (batch_size, 2+3+num_class, num_proposal)
        return net


torch.manual_seed(0)
B, K, C = 2, 16, 4
model = ProposalModuleRefine(num_class=C, num_proposal=K)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
for step in range(3):
    features = torch.randn(B, 32, K)
    surface_features = torch.randn(B, 32, 6 * K)
    line_features = torch.randn(B, 32, 12 * K)
    objectness_label = torch.randint(0, 2, (B, K))
    center_label = torch.randn(B, K, 3)
    sem_cls_label = torch.randint(0, C, (B, K))

    net = model(features, surface_features, line_features)
    objectness_loss = F.cross_entropy(net[:, 0:2], objectness_label)
    center_loss = F.smooth_l1_loss(net[:, 2:5].transpose(2, 1), center_label)
    sem_cls_loss = F.cross_entropy(net[:, 5:], sem_cls_label)
    loss = objectness_loss + center_loss + 0.1 * sem_cls_loss
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print("step", step, "loss", round(loss.item(), 4))
