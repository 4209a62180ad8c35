"""PyTorch forum thread "Averaging models with differentiable weighting coefficients",
https://discuss.pytorch.org/t/averaging-models-with-differentiable-weighting-coefficients/177240
(the first post is not in the stored copy; the replies describe the setup). The user has several trained
models model_i of one architecture and wants to learn weighting coefficients so that the averaged model
does well: build a fresh model, load a state dict holding sum_i coeff_i * weight_i, run it, backpropagate
to the coefficients. K. Frank answered that this cannot work: layers keep their weights as leaf
Parameters, and loading a state dict copies only the values of the averaged tensors into them, so no
gradient goes back to the coefficients. Fix (the replies): compute the averaged weights from the
coefficients and use them in the forward directly (functional forms; ptrblck showed parametrize), here with
torch.func.functional_call."""
import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(1)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(6, 16)
        self.fc2 = nn.Linear(16, 3)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


models = [Net() for _ in range(3)]              # the trained model_i (frozen)
for m in models:
    m.requires_grad_(False)
coeffs = nn.Parameter(torch.zeros(len(models)))  # weighting coefficients, softmax-normalised
optimizer = torch.optim.Adam([coeffs], lr=0.1)
avg_model = Net()
x, y = torch.randn(64, 6), torch.randint(0, 3, (64,))
coeffs_before = coeffs.detach().clone()

for step in range(5):
    w = torch.softmax(coeffs, dim=0)
    avg_state = {name: sum(w[i] * m.state_dict()[name] for i, m in enumerate(models))
                 for name in avg_model.state_dict()}
    out = torch.func.functional_call(avg_model, avg_state, (x,))
    loss = nn.functional.cross_entropy(out, y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()

print("coeffs.grad:", coeffs.grad)
print("coeffs changed:", not torch.equal(coeffs_before, coeffs.detach()))
