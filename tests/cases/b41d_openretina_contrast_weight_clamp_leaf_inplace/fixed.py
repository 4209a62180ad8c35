# open-retina PR #180 (Spatial Contrast model): after each optimizer step the
# contrast weight is projected back to w >= 0 with an in-place clamp on the
# nn.Parameter itself. The Lightning loop is written out in plain torch.
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class SoftplusNonlinearity(nn.Module):
    def __init__(self, w_init=0.0, a_init=1.0, b_init=1.0, c_init=0.0):
        super().__init__()
        self.w = nn.Parameter(torch.tensor(w_init), requires_grad=True)
        self.a = nn.Parameter(torch.tensor(a_init), requires_grad=True)
        self.b = nn.Parameter(torch.tensor(b_init), requires_grad=True)
        self.c = nn.Parameter(torch.tensor(c_init), requires_grad=True)

    def forward(self, imean, lsc):
        combined = imean + self.w * lsc
        return self.a * F.softplus(self.b * combined + self.c)


class SingleCellSpatialContrast(nn.Module):
    def __init__(self, h=8, w=8, t_len=5):
        super().__init__()
        # frozen filters (from the STA) are buffers
        self.register_buffer("spatial_filter", torch.rand(h, w))
        self.register_buffer("temporal_filter", torch.randn(t_len))
        self.register_buffer("spatial_filter_sum", self.spatial_filter.sum())
        self.nonlinearity = SoftplusNonlinearity(w_init=0.1)

    def forward(self, x):  # x: (batch, time, h, w)
        b, t, h, w = x.shape
        xr = x.permute(0, 2, 3, 1).reshape(b * h * w, 1, t)
        filt = F.conv1d(xr, self.temporal_filter.view(1, 1, -1)).reshape(b, h, w, -1).permute(0, 3, 1, 2)
        imean = (self.spatial_filter * filt).sum(dim=(-2, -1)) / (self.spatial_filter_sum + 1e-8)
        dev = (filt - imean[:, :, None, None]) ** 2
        lsc = torch.sqrt((self.spatial_filter * dev).sum(dim=(-2, -1)) / (self.spatial_filter_sum + 1e-8))
        return self.nonlinearity(imean, lsc)

    def training_step(self, batch):
        x, y = batch
        out = self(x)
        return F.poisson_nll_loss(out, y, log_input=False)

    def optimizer_step(self, optimizer, optimizer_closure):
        optimizer.step(closure=optimizer_closure)
        # To avoid negative model predictions, clamp the contrast weight
        self.nonlinearity.w.data.clamp_(min=0.0)

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-2)


model = SingleCellSpatialContrast()
optimizer = model.configure_optimizers()
x = torch.randn(16, 12, 8, 8)
y = torch.poisson(torch.ones(16, 8))

for step in range(5):
    def closure():
        optimizer.zero_grad()
        loss = model.training_step((x, y))
        loss.backward()
        return loss
    model.optimizer_step(optimizer, closure)
    print('step', step, 'w =', model.nonlinearity.w.item())
