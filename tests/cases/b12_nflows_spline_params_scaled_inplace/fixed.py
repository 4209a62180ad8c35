"""The fixed twin: the spline parameters are scaled out of place, as the reporter did (bayesiains/nflows#89)."""
import numpy as np
import torch
from torch import nn


class TransformNet(nn.Module):
    def __init__(self, in_features, out_features, hidden_features=16):
        super().__init__()
        self.hidden_features = hidden_features
        self.net = nn.Sequential(nn.Linear(in_features, hidden_features), nn.ReLU(),
                                 nn.Linear(hidden_features, out_features), nn.ReLU())

    def forward(self, x):
        return self.net(x)


class PiecewiseCouplingTransform(nn.Module):
    def __init__(self, num_bins=6):
        super().__init__()
        self.num_bins = num_bins
        self.transform_net = TransformNet(1, 2 * num_bins)

    def _piecewise_cdf(self, inputs, transform_params):
        unnormalized_widths = transform_params[..., :self.num_bins]
        unnormalized_heights = transform_params[..., self.num_bins:]
        unnormalized_widths = unnormalized_widths / np.sqrt(self.transform_net.hidden_features)
        unnormalized_heights = unnormalized_heights / np.sqrt(self.transform_net.hidden_features)
        widths, heights = unnormalized_widths.softmax(-1), unnormalized_heights.softmax(-1)
        cumwidths = torch.cat([torch.zeros_like(widths[..., :1]), widths.cumsum(-1)], -1)
        cumheights = torch.cat([torch.zeros_like(heights[..., :1]), heights.cumsum(-1)], -1)
        idx = torch.searchsorted(cumwidths[..., 1:].contiguous(), inputs.unsqueeze(-1).contiguous())
        idx = idx.clamp(max=self.num_bins - 1)
        w, h = widths.gather(-1, idx).squeeze(-1), heights.gather(-1, idx).squeeze(-1)
        x0, y0 = cumwidths.gather(-1, idx).squeeze(-1), cumheights.gather(-1, idx).squeeze(-1)
        return y0 + (inputs - x0) * h / w, torch.log(h / w)

    def forward(self, x):
        identity, transform = x[:, :1], x[:, 1]
        outputs, logabsdet = self._piecewise_cdf(transform, self.transform_net(identity))
        return torch.stack([identity[:, 0], outputs], 1), logabsdet


torch.manual_seed(0)
flow = PiecewiseCouplingTransform()
optimizer = torch.optim.Adam(flow.parameters(), lr=1e-2)
x = torch.stack([torch.rand(64), torch.rand(64) ** 2], 1)
first_before = flow.transform_net.net[0].weight.detach().clone()
for step in range(3):
    optimizer.zero_grad()
    z, logabsdet = flow(x)
    loss = -logabsdet.mean()  # uniform base density on the unit square
    loss.backward()
    optimizer.step()
print(f"transform net learned: {not torch.equal(flow.transform_net.net[0].weight, first_before)}")
