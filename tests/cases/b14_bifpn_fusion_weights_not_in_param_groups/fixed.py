"""The fixed twin: the BiFPN fusion weights get a parameter group of their own (bubbliiiing/efficientdet-pytorch#37),
so the fast-attention weights are learned."""
import torch
import torch.nn.functional as F
import torch.optim as optim
from torch import nn


class BiFPN(nn.Module):
    def __init__(self, c, epsilon=1e-4):
        super().__init__()
        self.epsilon = epsilon
        self.conv4_up, self.conv3_up = nn.Conv2d(c, c, 3, padding=1), nn.Conv2d(c, c, 3, padding=1)
        self.conv4_down, self.conv5_down = nn.Conv2d(c, c, 3, padding=1), nn.Conv2d(c, c, 3, padding=1)
        self.p4_w1 = nn.Parameter(torch.ones(2, dtype=torch.float32), requires_grad=True)
        self.p4_w1_relu = nn.ReLU()
        self.p3_w1 = nn.Parameter(torch.ones(2, dtype=torch.float32), requires_grad=True)
        self.p3_w1_relu = nn.ReLU()
        self.p4_w2 = nn.Parameter(torch.ones(3, dtype=torch.float32), requires_grad=True)
        self.p4_w2_relu = nn.ReLU()
        self.p5_w2 = nn.Parameter(torch.ones(2, dtype=torch.float32), requires_grad=True)
        self.p5_w2_relu = nn.ReLU()

    def forward(self, inputs):
        p3_in, p4_in, p5_in = inputs
        p4_w1 = self.p4_w1_relu(self.p4_w1)
        weight = p4_w1 / (torch.sum(p4_w1, dim=0) + self.epsilon)
        p4_td = self.conv4_up(F.silu(weight[0] * p4_in + weight[1] * F.interpolate(p5_in, scale_factor=2)))
        p3_w1 = self.p3_w1_relu(self.p3_w1)
        weight = p3_w1 / (torch.sum(p3_w1, dim=0) + self.epsilon)
        p3_out = self.conv3_up(F.silu(weight[0] * p3_in + weight[1] * F.interpolate(p4_td, scale_factor=2)))
        p4_w2 = self.p4_w2_relu(self.p4_w2)
        weight = p4_w2 / (torch.sum(p4_w2, dim=0) + self.epsilon)
        p4_out = self.conv4_down(F.silu(weight[0] * p4_in + weight[1] * p4_td + weight[2] * F.max_pool2d(p3_out, 2)))
        p5_w2 = self.p5_w2_relu(self.p5_w2)
        weight = p5_w2 / (torch.sum(p5_w2, dim=0) + self.epsilon)
        p5_out = self.conv5_down(F.silu(weight[0] * p5_in + weight[1] * F.max_pool2d(p4_out, 2)))
        return p3_out, p4_out, p5_out


class YoloBody(nn.Module):
    def __init__(self, c=8, num_outputs=6):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, c, 3, padding=1), nn.BatchNorm2d(c), nn.SiLU())
        self.bifpn = BiFPN(c)
        self.heads = nn.ModuleList(nn.Conv2d(c, num_outputs, 1) for _ in range(3))

    def forward(self, x):
        p3 = self.stem(x)
        feats = self.bifpn((p3, F.max_pool2d(p3, 2), F.max_pool2d(p3, 4)))
        return [head(f) for head, f in zip(self.heads, feats)]


torch.manual_seed(0)
model = YoloBody()
Init_lr_fit, momentum, weight_decay = 1e-2, 0.937, 5e-4
pg0, pg1, pg2 = [], [], []
for k, v in model.named_modules():
    if hasattr(v, "bias") and isinstance(v.bias, nn.Parameter):
        pg2.append(v.bias)
    if isinstance(v, nn.BatchNorm2d) or "bn" in k:
        pg0.append(v.weight)
    elif hasattr(v, "weight") and isinstance(v.weight, nn.Parameter):
        pg1.append(v.weight)
optimizer = optim.SGD(pg0, Init_lr_fit, momentum=momentum, nesterov=True)
optimizer.add_param_group({"params": pg1, "weight_decay": weight_decay})
optimizer.add_param_group({"params": pg2})
optimizer.add_param_group({"params": [p for n, p in model.named_parameters() if "_w1" in n or "_w2" in n]})
images = torch.randn(4, 3, 16, 16)
targets = [torch.randn(4, 6, 16 // s, 16 // s) for s in (1, 2, 4)]
for iteration in range(4):
    optimizer.zero_grad()
    outputs = model(images)
    loss = sum(F.mse_loss(o, t) for o, t in zip(outputs, targets))
    loss.backward()
    optimizer.step()
    print(f"iter {iteration}: loss {loss.item():.4f} p4_w1.grad {model.bifpn.p4_w1.grad.tolist()}")
print("bifpn.p4_w1 after training:", model.bifpn.p4_w1.tolist())
