"""runebook.dev (zh) "细说 PyTorch requires_grad_():从整体冻结到局部参数控制",
https://runebook.dev/zh/docs/pytorch/generated/torch.nn.module/torch.nn.Module.requires_grad_
The post's "错误做法" (wrong way): SimpleNet (fc1 -> relu -> fc2) is frozen as a whole with
`model.requires_grad_(False)` while the optimizer is still built from all of `model.parameters()`; "后续训练时,由于
没有参数需要[梯度]" -- in training no parameter requires grad, so the loss has no graph and `loss.backward()` raises
"element 0 of tensors does not require grad and does not have a grad_fn"; nothing learns. The post's direction
(title and use cases: freeze most layers, train the last ones): freeze only part of the model and give the optimizer
the parameters that still require grad. The fixed twin freezes fc1 only and filters the optimizer's list."""
import torch
import torch.nn as nn

torch.manual_seed(0)


class SimpleNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(10, 5)
        self.fc2 = nn.Linear(5, 1)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


model = SimpleNet()
model.fc1.requires_grad_(False)
optimizer = torch.optim.SGD(filter(lambda p: p.requires_grad, model.parameters()), lr=0.01)
criterion = nn.MSELoss()
x = torch.randn(32, 10)
y = torch.randn(32, 1)
fc2_before = model.fc2.weight.detach().clone()

for epoch in range(5):
    optimizer.zero_grad()
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()

print("fc2 changed:", not torch.equal(fc2_before, model.fc2.weight))
