"""PyTorch forums, "Forward gradient from one Variable to another in XNOR net",
https://discuss.pytorch.org/t/forward-gradient-from-one-variable-to-another-in-xnor-net/12913: the user builds a
binary network (XNOR-Net style) whose layers use the binarized weight torch.sign(weight) in the forward pass while
the full-precision self.weight is what the optimizer should update:
    class BinaryLinear(nn.Linear):
        def forward(self, x):
            return F.linear(x, self.weight.sign(), self.bias)
and finds that gradients do not flow back to the full-precision self.weight. The answer: sign is a discrete function
whose gradient is zero everywhere, so self.weight.grad is all zeros at every step and the binary weights never
change (only the biases and the batch norm learn).
Fix (the answer's): a custom sign that passes the incoming gradient straight through (a straight-through
estimator), SignPassGrad.apply(self.weight) in place of self.weight.sign(). The training data is a seeded
random batch."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(1)


class SignPassGrad(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input):
        return input.sign()

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output


class BinaryLinear(nn.Linear):
    def forward(self, x):
        return F.linear(x, SignPassGrad.apply(self.weight), self.bias)


class XNORNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = BinaryLinear(64, 32)
        self.bn1 = nn.BatchNorm1d(32)
        self.fc2 = BinaryLinear(32, 10)

    def forward(self, x):
        x = F.hardtanh(self.bn1(self.fc1(x)))
        return self.fc2(x)


model = XNORNet()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
criterion = nn.CrossEntropyLoss()
data = torch.randn(32, 64)
target = torch.randint(0, 10, (32,))
fc1_before = model.fc1.weight.detach().clone()

for step in range(5):
    optimizer.zero_grad()
    loss = criterion(model(data), target)
    loss.backward()
    print(f"step {step} loss {loss.item():.4f} fc1.weight.grad abs sum {model.fc1.weight.grad.abs().sum().item():.4f}")
    optimizer.step()

print("fc1.weight changed:", not torch.equal(fc1_before, model.fc1.weight))
