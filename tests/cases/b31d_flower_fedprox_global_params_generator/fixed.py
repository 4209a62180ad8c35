"""Flower pull request "Fix FedProx proximal term", https://github.com/flwrlabs/flower/pull/1654: the FedProx
strategy's docstring (and the client code written from it) adds the proximal term mu/2 * sum ||w - w_t|| to
the client loss, with the global weights taken as `global_params = copy.deepcopy(net).parameters()` before
local training. The PR's author reports that the proximal term always evaluated to 0 (attached logs of its value
for the first 200 samples) and fixes it by building detached copies of the parameters:
`global_params = [val.detach().clone() for val in net.parameters()]`.
Why (our reading; the PR states only the symptom and the fix): `.parameters()` returns a generator, so the
first batch's zip() exhausts it; on that batch the copy still equals the live weights (term 0, gradient 0), and
from the second batch on the loop body never runs and proximal_term stays the float 0.0. The client trains as
plain FedAvg: the proximal term never pulls the local weights back toward the global model.
The script runs one client's fit on non-IID data and prints the proximal term per step (all 0.0);
with the fix it is nonzero from the second step on and the weights end nearer the global model."""
import copy

import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(1)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(10, 32)
        self.fc2 = nn.Linear(32, 4)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def train(net, trainloader, epochs, proximal_mu):
    """Train the client model on its local data (the docstring's FedProx recipe)."""
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
    net.train()
    global_params = [val.detach().clone() for val in net.parameters()]
    prox_values = []
    for _ in range(epochs):
        for images, labels in trainloader:
            optimizer.zero_grad()
            proximal_term = 0.0
            for local_weights, global_weights in zip(net.parameters(), global_params):
                proximal_term += (local_weights - global_weights).norm(2)
            loss = criterion(net(images), labels) + (proximal_mu / 2) * proximal_term
            loss.backward()
            optimizer.step()
            prox_values.append(float(proximal_term.detach()) if torch.is_tensor(proximal_term) else proximal_term)
    return prox_values


# the server's global model, sent to the client as its starting point
global_model = Net()
net = Net()
net.load_state_dict(global_model.state_dict())

# a non-IID client: only two of the four classes, shifted inputs
x = torch.randn(64, 10) + 1.5
y = torch.randint(0, 2, (64,))
trainloader = [(x[i:i + 16], y[i:i + 16]) for i in range(0, 64, 16)]

prox_values = train(net, trainloader, epochs=3, proximal_mu=5.0)
drift = sum((p - g).norm(2).item() for p, g in zip(net.parameters(), global_model.parameters()))
print("proximal term per step:", [round(v, 4) for v in prox_values])
print("proximal term ever nonzero:", any(v != 0.0 for v in prox_values))
print(f"drift from global model after local training: {drift:.4f}")
