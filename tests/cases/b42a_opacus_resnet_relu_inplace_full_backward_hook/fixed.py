# Opacus (hooks mode) on a ResNet after ModuleValidator.fix(): BatchNorm became GroupNorm,
# every trainable layer gets a forward hook and a full backward hook that build grad_sample.
# The BasicBlock keeps torchvision's nn.ReLU(inplace=True), which writes in place into the
# output of a hooked GroupNorm.
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class BasicBlock(nn.Module):
    def __init__(self, planes):
        super().__init__()
        self.conv1 = nn.Conv2d(planes, planes, 3, padding=1, bias=False)
        self.bn1 = nn.GroupNorm(4, planes)
        self.relu = nn.ReLU()
        self.conv2 = nn.Conv2d(planes, planes, 3, padding=1, bias=False)
        self.bn2 = nn.GroupNorm(4, planes)

    def forward(self, x):
        identity = x
        out = self.conv1(x)
        out = self.bn1(out)
        out = self.relu(out)
        out = self.conv2(out)
        out = self.bn2(out)
        out = out + identity
        out = self.relu(out)
        return out


class ResNet(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.layer1 = BasicBlock(8)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(8, num_classes)

    def forward(self, x):
        x = self.conv1(x)
        x = self.layer1(x)
        x = self.avgpool(x).flatten(1)
        return self.fc(x)


def per_sample_grads(module, A, B):
    n = A.shape[0]
    if isinstance(module, nn.Linear):
        gs = {module.weight: torch.einsum("ni,nj->nij", B, A), module.bias: B}
    elif isinstance(module, nn.Conv2d):
        A_unf = F.unfold(A, module.kernel_size, padding=module.padding, stride=module.stride)
        B = B.reshape(n, B.shape[1], -1)
        gs = {module.weight: torch.einsum("noq,npq->nop", B, A_unf).view(n, *module.weight.shape)}
    else:  # GroupNorm
        normed = F.group_norm(A, module.num_groups, eps=module.eps)
        gs = {module.weight: (normed * B).sum(dim=(2, 3)), module.bias: B.sum(dim=(2, 3))}
    return gs


class GradSampleModule(nn.Module):
    def __init__(self, m):
        super().__init__()
        self._module = m
        for layer in m.modules():
            if isinstance(layer, (nn.Linear, nn.Conv2d, nn.GroupNorm)):
                layer.register_forward_hook(self.capture_activations_hook)
                layer.register_full_backward_hook(self.capture_backprops_hook)

    def capture_activations_hook(self, module, inputs, output):
        module.activations = inputs[0].detach()

    def capture_backprops_hook(self, module, grad_input, grad_output):
        A = module.activations
        B = grad_output[0].detach() * A.shape[0]  # loss_reduction="mean"
        for p, g in per_sample_grads(module, A, B).items():
            p.grad_sample = g

    def forward(self, x):
        return self._module(x)


model = GradSampleModule(ResNet())
optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
criterion = nn.CrossEntropyLoss()
max_grad_norm, noise_multiplier = 1.0, 0.0

x = torch.randn(8, 3, 8, 8)
y = torch.randint(0, 10, (8,))
before = model._module.fc.weight.detach().clone()

for step in range(3):
    optimizer.zero_grad()
    out = model(x)
    loss = criterion(out, y)
    loss.backward()
    params = [p for p in model.parameters() if p.requires_grad]
    norms = torch.stack([p.grad_sample.flatten(1).norm(dim=1) for p in params]).norm(dim=0)
    factor = (max_grad_norm / (norms + 1e-6)).clamp(max=1.0)
    for p in params:
        summed = torch.einsum("n,n...->...", factor, p.grad_sample)
        noise = torch.randn_like(summed) * noise_multiplier * max_grad_norm
        p.grad = (summed + noise) / x.shape[0]
    optimizer.step()
    print(f"step {step} loss {loss.item():.4f}")

print("fc weight changed:", not torch.equal(before, model._module.fc.weight))
