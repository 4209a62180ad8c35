# PyTorch Stacked Capsule Autoencoder part encoder; geometric_transform is adapted line by
# line from the TensorFlow original (capsules/math_ops.py), where `theta *= 2. * math.pi`
# just rebinds an immutable tf.Tensor.
import math
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class PCAE(nn.Module):
    def __init__(self, num_capsules=4, template_size=5, num_feature_maps=8):
        super().__init__()
        self.num_capsules = num_capsules
        self.num_feature_maps = num_feature_maps
        self.capsules = nn.Sequential(nn.Conv2d(1, 16, 3, stride=2), nn.ReLU(),
                                      nn.Conv2d(16, num_capsules * num_feature_maps, 1))
        self.templates = nn.Parameter(torch.randn(num_capsules, 1, template_size, template_size))
        self.soft_max = nn.Softmax(2)
        self.relu = nn.ReLU()

    def forward(self, x):
        outputs = self.capsules(x)
        outputs = outputs.view(-1, self.num_capsules, self.num_feature_maps, *outputs.size()[2:])
        attention = outputs[:, :, -1, :, :].unsqueeze(2)
        attention_soft = self.soft_max(attention.view(*attention.size()[:3], -1)).view_as(attention)
        feature_maps = outputs[:, :, :-1, :, :]
        part_capsule_param = torch.sum(torch.sum(feature_maps * attention_soft, dim=-1), dim=-1)
        x_m = self.relu(part_capsule_param[:, :, :6])
        B, _, _, target_size = x.size()
        transformed = [F.grid_sample(self.templates[i:i + 1].repeat(B, 1, 1, 1),
                                     F.affine_grid(self.geometric_transform(x_m[:, i, :]),
                                                   torch.Size((B, 1, target_size, target_size)),
                                                   align_corners=False),
                                     align_corners=False)
                       for i in range(self.num_capsules)]
        transformed = torch.cat(transformed, 1)
        return ((x - transformed.mean(1, keepdim=True)) ** 2).mean()

    @staticmethod
    def geometric_transform(pose_tensor, nonlinear=True):
        scale_x, scale_y, theta, shear, trans_x, trans_y = torch.split(pose_tensor, 1, -1)
        if nonlinear:
            scale_x, scale_y = torch.sigmoid(scale_x) + 1e-2, torch.sigmoid(scale_y) + 1e-2
            trans_x, trans_y, shear = torch.tanh(trans_x * 5.), torch.tanh(trans_y * 5.), torch.tanh(shear * 5.)
            theta *= 2. * math.pi  # <- autograd_error
        else:
            scale_x, scale_y = (abs(i) + 1e-2 for i in (scale_x, scale_y))
        c, s = torch.cos(theta), torch.sin(theta)
        pose = [scale_x * c + shear * scale_y * s, -scale_x * s + shear * scale_y * c,
                trans_x, scale_y * s, scale_y * c, trans_y]
        pose = torch.cat(pose, -1)
        return torch.reshape(pose, list(pose.shape[:-1]) + [2, 3])


model = PCAE()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
for step in range(2):
    images = torch.rand(2, 1, 12, 12)
    loss = model(images)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print("templates grad:", model.templates.grad.abs().sum().item())
