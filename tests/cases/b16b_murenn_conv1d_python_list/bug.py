"""kymatio/murenn, https://github.com/kymatio/murenn/issues/42 (fixed by PR #44)
Seen: MuReNNDirect's learnable per-octave Conv1d filters never train; model.parameters() does not list them.
Why: __init__ builds the Conv1d filters and the downsampling stages in plain Python lists and assigns
self.conv1d = conv1d / self.down = down, so nn.Module never registers them: they get gradients in backward but the
optimizer built over model.parameters() does not hold them.
Fix: self.conv1d = torch.nn.ModuleList(conv1d) (and ModuleList for down).
"""
import torch

torch.manual_seed(0)


class MuReNNDirect(torch.nn.Module):
    def __init__(self, *, J, Q, T, in_channels):
        super().__init__()
        self.Q = [Q for j in range(J)]
        self.T = [T * self.Q[j] for j in range(J)]
        self.in_channels = in_channels
        self.J = J
        down = []
        conv1d = []
        for j in range(J):
            down.append(torch.nn.AvgPool1d(kernel_size=2 ** (J - j)))  # stand-in for the DTCWT lowpass stage
            conv1d_j = torch.nn.Conv1d(in_channels, self.Q[j] * in_channels, kernel_size=self.T[j],
                                       bias=False, groups=in_channels, padding="same")
            torch.nn.init.normal_(conv1d_j.weight)
            conv1d.append(conv1d_j)
        self.down = down
        self.conv1d = conv1d  # <- non_parameter_tensor

    def forward(self, bps):
        UWx = []
        for j in range(self.J):
            Wx_j = self.conv1d[j](bps[j])
            UWx_j = self.down[j](Wx_j.abs())
            B, _, N = UWx_j.shape
            UWx.append(UWx_j.view(B, self.in_channels, self.Q[j], N))
        return torch.cat(UWx, dim=2)


J, N = 3, 32
model = MuReNNDirect(J=J, Q=3, T=1, in_channels=1)
head = torch.nn.Linear(J * 3 * (N // 2 ** J), 1)
optimizer = torch.optim.Adam(list(model.parameters()) + list(head.parameters()), lr=1e-2)
print("model parameters:", len(list(model.parameters())))
w0 = model.conv1d[0].weight.detach().clone()
for step in range(5):
    bps = [torch.randn(4, 1, N // 2 ** j) for j in range(J)]  # band-pass subbands from the DTCWT
    y = torch.randn(4, 1)
    loss = torch.nn.functional.mse_loss(head(model(bps).flatten(1)), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print("conv1d[0] grad is None:", model.conv1d[0].weight.grad is None)
print("conv1d[0] changed:", not torch.equal(w0, model.conv1d[0].weight.detach()))
