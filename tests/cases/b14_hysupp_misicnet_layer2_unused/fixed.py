"""The fixed twin: forward applies layer2 after layer1, as the original MiSiCNet does (inria-thoth/HySUPP#3), so
every conv block is trained."""
import torch
import torch.nn.functional as F
from torch import nn


class MiSiCNet(nn.Module):
    def __init__(self, L, p, H, W, niters=5, lr=1e-3, lambd=100.0, width=16):
        super().__init__()
        self.L, self.p, self.H, self.W = L, p, H, W
        self.niters, self.lr, self.lambd = niters, lr, lambd
        lrelu_params = {"negative_slope": 0.1, "inplace": True}
        self.layer1 = nn.Sequential(nn.ReflectionPad2d(1), nn.Conv2d(L, width, 3), nn.BatchNorm2d(width),
                                    nn.LeakyReLU(**lrelu_params))
        self.layer2 = nn.Sequential(nn.ReflectionPad2d(1), nn.Conv2d(width, width, 3),
                                    nn.BatchNorm2d(width), nn.LeakyReLU(**lrelu_params))
        self.layerskip = nn.Sequential(nn.Conv2d(L, 4, 1), nn.BatchNorm2d(4), nn.LeakyReLU(**lrelu_params))
        self.layer3 = nn.Sequential(nn.ReflectionPad2d(1), nn.Conv2d(width + 4, width, 3), nn.BatchNorm2d(width),
                                    nn.LeakyReLU(**lrelu_params))
        self.layer4 = nn.Sequential(nn.ReflectionPad2d(1), nn.Conv2d(width, p, 3), nn.BatchNorm2d(p),
                                    nn.LeakyReLU(**lrelu_params))
        self.decoder = nn.Linear(p, L, bias=False)
        self.softmax = nn.Softmax(dim=1)

    def forward(self, x):
        x1 = self.layer2(self.layer1(x))
        xskip = self.layerskip(x)
        xcat = torch.cat([x1, xskip], dim=1)
        abund = self.softmax(self.layer4(self.layer3(xcat)))
        abund_reshape = torch.transpose(abund.squeeze().view(-1, self.H * self.W), 0, 1)
        img = self.decoder(abund_reshape)
        return abund_reshape, img

    def loss(self, target, output):
        N, L = output.shape
        target_reshape = target.squeeze().reshape(L, N)
        fit_term = 0.5 * torch.linalg.norm(target_reshape.t() - output, "fro") ** 2
        mean = target_reshape.mean(1, keepdims=True)
        reg_term = torch.linalg.norm(self.decoder.weight - mean, "fro") ** 2
        return fit_term + self.lambd * reg_term


torch.manual_seed(0)
L, p, H, W = 8, 3, 6, 6
Y = torch.rand(1, L, H, W)
model = MiSiCNet(L, p, H, W)
noisy_input = torch.rand_like(Y)
optimizer = torch.optim.Adam(model.parameters(), lr=model.lr)
layer2_before = model.layer2[1].weight.detach().clone()
for ii in range(model.niters):
    optimizer.zero_grad()
    abund, output = model(noisy_input)
    loss = model.loss(Y, output)
    loss.backward()
    optimizer.step()
    print(f"iter {ii}: loss {loss.item():.4f}")
print(f"layer2 grad set: {model.layer2[1].weight.grad is not None}; "
      f"changed: {not torch.equal(layer2_before, model.layer2[1].weight)}")
