"""PyTorch forum thread "I want to create a learnable parameter when aggregrate several models together",
https://discuss.pytorch.org/t/i-want-to-create-a-learnable-parameter-when-aggregrate-several-models-together/179866
(only ptrblck's answer is in the stored copy; the setup below follows it). The user aggregates several client
models into one global model with a learnable weight per client: the weighted sum is written into a state_dict
and loaded into the global model, then the global model's loss is backpropagated to learn the weights. They do
not learn. ptrblck: "the usage of weight is not captured in a differentiable operation since you are manipulating
the state_dict directly and load it afterwards", and pointed to a parametrization. load_state_dict copies the
values into the global model's leaf Parameters, so the graph back to `weight` is cut there.
Fix (the answer's idea: use the weighted sum as the weights in the forward itself), written with
torch.func.functional_call. The script prints weight.grad (None) and that the weights never moved."""
import torch
import torch.nn as nn
from torch.func import functional_call

torch.manual_seed(0)
torch.set_num_threads(1)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 3)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


num_clients = 3
client_models = [Net() for _ in range(num_clients)]  # trained locally, frozen on the server
for m in client_models:
    m.requires_grad_(False)
client_sds = [m.state_dict() for m in client_models]
global_model = Net()

weight = nn.Parameter(torch.full((num_clients,), 1.0 / num_clients))  # learnable aggregation weights
optimizer = torch.optim.Adam([weight], lr=0.05)
criterion = nn.CrossEntropyLoss()
x_val = torch.randn(32, 8)  # the server's small validation set
y_val = torch.randint(0, 3, (32,))
weight_before = weight.detach().clone()

for step in range(5):
    agg_sd = {k: sum(weight[i] * client_sds[i][k] for i in range(num_clients)) for k in client_sds[0]}
    out = functional_call(global_model, agg_sd, (x_val,))
    loss = criterion(out, y_val)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()

print("weight.grad:", weight.grad)
print("aggregation weights changed:", not torch.equal(weight_before, weight.detach()))
