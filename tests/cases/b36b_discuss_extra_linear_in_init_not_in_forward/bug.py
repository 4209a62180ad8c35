# discuss.pytorch.org "Relationship between the net structure and forward":
# a layer (extra_linear) is built in __init__, so it shows up in print(model)
# and in model.parameters(), but forward() never calls it. It takes no part
# in the loss, so its weight gets no gradient and is never updated.
import torch

torch.manual_seed(0)


class Net(torch.nn.Module):
    def __init__(self, D_in, H, D_out):
        super(Net, self).__init__()
        self.input_linear = torch.nn.Linear(D_in, H)
        self.middle_linear = torch.nn.Linear(H, H)
        self.extra_linear = torch.nn.Linear(H, H)  # <- unused_parameter
        self.output_linear = torch.nn.Linear(H, D_out)

    def forward(self, x):
        h_relu = self.input_linear(x).clamp(min=0)
        h_relu = self.middle_linear(h_relu).clamp(min=0)
        y_pred = self.output_linear(h_relu)
        return y_pred


N, D_in, H, D_out = 16, 10, 20, 3
x = torch.randn(N, D_in)
y = torch.randn(N, D_out)

model = Net(D_in, H, D_out)
print(model)  # extra_linear is listed here...
criterion = torch.nn.MSELoss(reduction="sum")
optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)

before = model.extra_linear.weight.detach().clone()
for t in range(5):
    y_pred = model(x)
    loss = criterion(y_pred, y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()

# ...but it never receives a gradient and never changes
print("extra_linear.weight.grad:", model.extra_linear.weight.grad)
print("extra_linear changed:", not torch.equal(before, model.extra_linear.weight))
