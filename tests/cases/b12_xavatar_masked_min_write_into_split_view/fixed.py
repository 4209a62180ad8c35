"""X-Avatar's implicit body model (Skype-line/X-Avatar#12, RGB-D training): the SDF predicted for all canonical
correspondences is cut back per body part with `torch.split`, each piece is reshaped to (batch, point, candidate),
and `masked_softmax(..., mode='min')` writes `vec[~mask.bool()] = 1` into it, which raises "Output 0 of
ReshapeAliasBackward0 is a view and is being modified inplace. This view is the output of a function that returns
multiple views. Such functions do not allow the output views to be modified inplace". The write must be out of
place (`vec = vec.masked_fill(~mask.bool(), 1)`)."""
import torch
import torch.nn.functional as F
from torch import nn


def masked_softmax(vec, mask, dim=-1, mode='min'):
    if mode == 'min':
        vec = vec.masked_fill(~mask.bool(), 1)
        value, index = torch.min(vec, dim, keepdim=True)
    else:
        raise NotImplementedError
    return value, index


class ImplicitBody(nn.Module):
    def __init__(self):
        super().__init__()
        self.shape_net = nn.Sequential(nn.Linear(3, 64), nn.Softplus(beta=100), nn.Linear(64, 1))

    def forward(self, pts_c_list, mask_list):
        split_num_list = [p.shape[1] for p in pts_c_list]
        shape_pd = self.shape_net(torch.cat(pts_c_list, dim=1))
        accum_shape = []
        for shape_pd, mask in zip(torch.split(shape_pd, split_num_list, dim=1), mask_list):
            num_batch, num_point, num_init = mask.shape
            shape_pd = shape_pd.reshape(num_batch, num_point, num_init)
            shape_pd, index = masked_softmax(shape_pd, mask, dim=-1, mode='min')
            accum_shape.append(shape_pd)
        return torch.cat(accum_shape, 1)


torch.manual_seed(0)
model = ImplicitBody()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
num_init = 9  # canonical candidates per deformed point (one per bone initialisation)
parts = [(1, 40), (1, 24)]  # body, hands: (batch, points)
mask_list = [torch.rand(b, n, num_init) > 0.3 for b, n in parts]
pts_c_list = [torch.rand(b, n * num_init, 3) * 2 - 1 for b, n in parts]
sdf_gt = torch.zeros(1, 64, 1)
before = {n: p.detach().clone() for n, p in model.named_parameters()}
for it in range(2):
    shape_pd = model(pts_c_list, mask_list)
    loss = F.l1_loss(shape_pd, sdf_gt)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"iter {it}: loss {loss.item():.4f}")
for n, p in model.named_parameters():
    print(n, "grad", p.grad is not None, "changed", not torch.equal(before[n], p))
