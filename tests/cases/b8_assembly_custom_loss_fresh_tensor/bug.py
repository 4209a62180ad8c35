"""Adding a loss to a part-assembly model (Wuziyi616/multi_part_assembly#4): the new custom loss is built as a
fresh torch.Tensor from per-part numbers, so it shows in the loss dict without grad_fn and its weight changes nothing."""
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 7))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
parts, gt_trans, gt_rot = torch.randn(8, 6), torch.randn(8, 3), F.normalize(torch.randn(8, 4), dim=-1)


def calc_loss(out):
    trans, rot = out[:, :3], F.normalize(out[:, 3:], dim=-1)
    trans_loss = F.mse_loss(trans, gt_trans)
    rot_loss = (1 - (rot * gt_rot).sum(-1).abs()).mean()
    custom_loss = torch.Tensor([(t - g).norm().item() for t, g in zip(trans, gt_trans)])  # <- cut_term
    return {"trans_loss": trans_loss, "rot_loss": rot_loss, "custom_loss": custom_loss.mean()}


for step in range(30):
    loss_dict = calc_loss(model(parts))
    loss = loss_dict["trans_loss"] + loss_dict["rot_loss"] + 5.0 * loss_dict["custom_loss"]
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print({k: (round(v.item(), 4), v.grad_fn is not None) for k, v in loss_dict.items()})
