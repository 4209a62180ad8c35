"""PyTorch forum thread "A layer with weighted sum of two weights" (user Wang, answered by K. Frank), read
from its copy in https://huggingface.co/datasets/nvidia/Nemotron-CC-Math-v1 (the discuss.pytorch.org
address itself was not retrievable): the user wants a linear layer whose weight is alpha * W1 +
(1 - alpha) * W2, to learn W1, W2 and the mixing weight alpha, and builds it with
`fc_sum.weight = nn.Parameter(fc1.weight.data * alpha + fc2.weight.data * (1 - alpha))`; after
loss.backward() both alpha.grad and fc1.weight.grad are None. `.data` already detaches W1 and W2, and
nn.Parameter(...) makes the mixed weight a fresh leaf with no history, so alpha is cut too: only the
throwaway fc_sum.weight gets a gradient. Fix: compute the mixed weight as a plain tensor and use it
directly (Frank: outputs = alpha * fc1(inputs) + (1 - alpha) * fc2(inputs); for the user's general
"parametrize every layer" case, evaluate the layer at the computed weight, here with
torch.func.functional_call). The single backward of the post is put in a short SGD loop."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(1)

fc1 = nn.Linear(4, 6, bias=False)
fc2 = nn.Linear(4, 6, bias=False)
fc_sum = nn.Linear(4, 6, bias=False).requires_grad_(False)
alpha = torch.tensor(0.1, requires_grad=True)
optimizer = torch.optim.SGD([alpha, fc1.weight, fc2.weight], lr=0.1)
alpha_before = alpha.detach().clone()

for step in range(5):
    inputs = torch.rand([1, 4])
    w_sum = fc1.weight * alpha + fc2.weight * (1 - alpha)
    outputs = torch.func.functional_call(fc_sum, {"weight": w_sum}, (inputs,))
    loss = torch.sum(outputs ** 2)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()

print(alpha.grad)
print(fc1.weight.grad)
print("alpha changed:", not torch.equal(alpha_before, alpha.detach()))
