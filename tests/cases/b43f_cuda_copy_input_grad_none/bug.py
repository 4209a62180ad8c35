# Shape of pytorch/pytorch#12627 ("using pytorch 0.4 using cuda show grad was None").
# The asker sets requires_grad on the input, then moves it with .cuda() and reads
# inputs.grad in the training loop: it prints None. Here the copy is a dtype move
# (.double()) so the script runs on CPU; the mechanism (a copy op after
# requires_grad is set, rebinding the name to a non-leaf) is the same.
import torch
from torch import nn, optim

torch.manual_seed(0)

inputs = torch.Tensor(torch.randn(3, 5))
targets = torch.Tensor([1, 2, 3]).long()
inputs.requires_grad = True

inputs, targets = inputs.double(), targets  # <- non_leaf_watched

Net = nn.Sequential(
    nn.Linear(5, 5),
    nn.Softmax(dim=1),
).double()

Net.train()
optimizer = optim.Adam(Net.parameters(), lr=0.001)
loss_fn = nn.NLLLoss()
for i in range(3):
    optimizer.zero_grad()
    out = Net(inputs[0].view(1, 5))
    loss = loss_fn(out.view(1, 5), targets[0].view(1))
    loss.backward()
    print(inputs.grad)
    optimizer.step()
