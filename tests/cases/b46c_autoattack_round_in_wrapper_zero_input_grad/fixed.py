# Shape of fra31/auto-attack#44 ("Rounding to nearest pixel value breaks almost all attacks"):
# the user wraps a CIFAR-10 classifier so that its input is clamped, scaled to [0, 255],
# rounded to whole pixel values and normalized before the network sees it, then runs a
# gradient attack (AutoAttack's APGD; here a hand-written L-inf PGD stand-in) on the wrapper.
# torch.round has zero derivative everywhere, so the gradient reaching the perturbed image
# is exactly zero: sign(0) = 0, the image never moves and robust accuracy = clean accuracy.
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc = nn.Linear(32 * 4 * 4, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc(x.flatten(1))


class ModelWrapper(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model.eval()
        self.mean = torch.tensor([0.4914, 0.4822, 0.4465]).view(1, 3, 1, 1)
        self.std = torch.tensor([0.2470, 0.2435, 0.2616]).view(1, 3, 1, 1)

    def forward(self, x):
        x = x.clamp(0, 1)
        x = x * 255
        x = x + (torch.round(x) - x).detach()  # round forward, identity backward
        x = x / 255
        x = (x - self.mean) / self.std
        x = self.model(x)
        return x


class LinfPGD:
    """Stand-in for the gradient attacks AutoAttack runs (APGD-CE)."""

    def __init__(self, model, eps=8 / 255, alpha=2 / 255, steps=10):
        self.model, self.eps, self.alpha, self.steps = model, eps, alpha, steps

    def perturb(self, x, y):
        x_adv = x.clone().detach()
        for step in range(self.steps):
            x_adv.requires_grad_(True)
            loss = F.cross_entropy(self.model(x_adv), y)
            loss.backward()
            grad = x_adv.grad
            if step == 0:
                print("input grad abs sum:", grad.abs().sum().item())  # <- symptom
            with torch.no_grad():
                x_adv = x_adv + self.alpha * grad.sign()
                x_adv = torch.min(torch.max(x_adv, x - self.eps), x + self.eps).clamp(0, 1)
            x_adv = x_adv.detach()
        return x_adv


net = SmallCNN()
for p in net.parameters():
    p.requires_grad_(False)
model = ModelWrapper(net)

x_test = torch.rand(64, 3, 16, 16)
with torch.no_grad():
    y_test = model(x_test).argmax(1)  # labels the model gets right

attack = LinfPGD(model)
x_adv = attack.perturb(x_test, y_test)
with torch.no_grad():
    clean_acc = (model(x_test).argmax(1) == y_test).float().mean().item()
    robust_acc = (model(x_adv).argmax(1) == y_test).float().mean().item()
print(f"clean accuracy {clean_acc:.2%}, robust accuracy {robust_acc:.2%}")
print("max |x_adv - x| * 255:", ((x_adv - x_test).abs().max() * 255).item())
