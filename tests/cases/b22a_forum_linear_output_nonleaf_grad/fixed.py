"""PyTorch Forums thread "Trying to understand why output of nn.Linear (for output layer) isn't retaining"
(https://discuss.pytorch.org/t/trying-to-understand-why-output-of-nn-linear-for-output-layer-isnt-retaining/40116).
The user's SingleRNN stores its layer outputs (self.L0_X, self.L1_H, self.L2_Y); after loss.backward()
the final layer's weight has a gradient, but self.L2_Y.grad (the output of the last nn.Linear) is None.
Why: self.L2_Y is produced by an operation (Why's linear), so it is a non-leaf tensor; autograd only
populates .grad on leaves unless retain_grad() is called on the non-leaf before backward.
Fix: call self.L2_Y.retain_grad() right after computing it in forward (or read the leaf Why.weight.grad)."""
import torch
import torch.nn as nn

if torch.cuda.is_available():
    device = torch.device('cuda')
else:
    device = torch.device('cpu')
device = torch.device('cpu')  # this reproduction runs on CPU
type = torch.float
args = {'device': device, 'dtype': type}


class SingleRNN(nn.Module):
    def __init__(self, n_inputs, n_outputsize):
        super(SingleRNN, self).__init__()

        numHU = 2
        bias = False

        self.Wxh = nn.Linear(
            in_features=n_inputs, out_features=numHU, bias=bias)

        self.Whh = nn.Linear(
            in_features=numHU + self.Wxh.out_features, out_features=numHU, bias=bias)

        self.Why = nn.Linear(
            in_features=numHU, out_features=n_outputsize, bias=bias)

    def forward(self, X0, H0):
        self.L0_X = self.Wxh(X0)
        self.L1_H = self.Whh(torch.cat((self.L0_X, H0), dim=1))
        self.L2_Y = self.Why(self.L1_H)
        self.L2_Y.retain_grad()
        return self.L2_Y


torch.manual_seed(0)
model = SingleRNN(n_inputs=3, n_outputsize=1).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
X0 = torch.randn(4, 3, **args)
H0 = torch.zeros(4, 2, **args)
target = torch.randn(4, 1, **args)
for step in range(3):
    optimizer.zero_grad()
    out = model(X0, H0)
    loss = ((out - target) ** 2).mean()
    loss.backward()
    print(f"step {step} loss={loss.item():.4f}")
    print("  Why.weight.grad:", model.Why.weight.grad)
    print("  L2_Y.grad:", model.L2_Y.grad)
    optimizer.step()
