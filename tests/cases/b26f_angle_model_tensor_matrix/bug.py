"""discuss.pytorch.org "Trying to find an angle (use of trigonometric functions); optimizer not updating",
https://discuss.pytorch.org/t/trying-to-find-an-angle-use-of-trigonometric-functions-optimizer-not-updating/26780
The user learns the angle of an axis/angle rotation with an nn.Module holding `self.angle = nn.Parameter(...)`.
The rotation matrix is assembled in forward with `torch.Tensor([[m11, m21, m31], ...])`: building a new tensor
from the entries copies their values and drops their history, so the matrix (and the model output) no longer
depends on `angle`; with a plain input the loss has no grad_fn and `loss.backward()` raises "element 0 of
tensors does not require grad" (the `.requires_grad_()` calls sprinkled on the entries are the user's attempts
at that error; they do not reconnect anything). A second, hidden problem: qw/qz are computed from the angle once,
in __init__, so even a differentiable matrix would never follow the updated angle. Fix: build the matrix with
torch.stack/torch.cat, and compute qw/qz from self.angle inside forward. The bug script raises the RuntimeError."""
import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(1)


class AngleModel(torch.nn.Module):
    def __init__(self):
        super(AngleModel, self).__init__()
        self.angle = nn.Parameter(torch.tensor(0.0, requires_grad=True))
        self.qw = torch.cos(self.angle / 2.)
        self.qx = torch.zeros(1)
        self.qy = torch.zeros(1)
        self.qz = torch.sin(self.angle / 2.)

    def forward(self, input):
        m11 = 1. - 2. * torch.pow(self.qy, 2) - 2. * torch.pow(self.qz, 2).requires_grad_()
        m22 = 1. - 2. * torch.pow(self.qx, 2) - 2. * torch.pow(self.qz, 2).requires_grad_()
        m33 = 1. - 2. * torch.pow(self.qx, 2) - 2. * torch.pow(self.qy, 2).requires_grad_()

        m21 = 2. * self.qx * self.qy - 2. * self.qz * self.qw
        m12 = 2. * self.qx * self.qy + 2. * self.qz * self.qw

        m31 = 2. * self.qx * self.qz + 2 * self.qy * self.qw
        m13 = 2. * self.qx * self.qz - 2 * self.qy * self.qw

        m32 = 2. * self.qy * self.qz - 2. * self.qx * self.qw
        m23 = 2. * self.qy * self.qz + 2. * self.qx * self.qw

        matrix = torch.Tensor([  # <- tensor_rewrap
            [m11, m21, m31],
            [m12, m22, m32],
            [m13, m23, m33],
        ])

        output = torch.matmul(input.float(), matrix.float())
        return output


# vector sets: target = input rotated about z by 0.8 rad, plus a little noise
true_angle = torch.tensor(0.8)
c, s = torch.cos(true_angle), torch.sin(true_angle)
rot = torch.tensor([[c, -s, 0.], [s, c, 0.], [0., 0., 1.]])
inputs = torch.randn(100, 3)
targets = inputs @ rot + 0.01 * torch.randn(100, 3)

model = AngleModel()
crit = torch.nn.MSELoss()
l_rate = 0.1
optim = torch.optim.SGD(model.parameters(), lr=l_rate)
epochs = 30

for epoch in range(epochs):
    optim.zero_grad()
    output = model(inputs)
    loss = crit(output, targets)
    loss.backward()
    optim.step()

print("learned angle:", model.angle.item())
