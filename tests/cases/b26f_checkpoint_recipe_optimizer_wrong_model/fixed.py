"""pytorch/tutorials issue #1430 "Problem of SAVING AND LOADING A GENERAL CHECKPOINT IN PYTORCH",
https://github.com/pytorch/tutorials/issues/1430.
In the recipe's "load the general checkpoint" step a fresh `model = Net()` is built and loaded with
`model.load_state_dict(...)`, but the optimizer is rebuilt from the *old* network: `optim.SGD(net.parameters(), ...)`.
Resuming training then runs forward/backward through `model`: its parameters get gradients but are in no
optimizer, while the optimizer steps `net`, whose parameters get no gradient. The resumed model never changes
and its loss stays where the checkpoint left it. Fix (as the reporter says): build the optimizer from
`model.parameters()`. The checkpoint goes to an in-memory buffer instead of a file."""
import io

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

torch.manual_seed(0)
torch.set_num_threads(1)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(10, 16)
        self.fc2 = nn.Linear(16, 3)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


criterion = nn.CrossEntropyLoss()
inputs, labels = torch.randn(32, 10), torch.randint(0, 3, (32,))

# --- train a bit and save a general checkpoint ---
net = Net()
optimizer = optim.SGD(net.parameters(), lr=0.001, momentum=0.9)
for epoch in range(3):
    optimizer.zero_grad()
    loss = criterion(net(inputs), labels)
    loss.backward()
    optimizer.step()
PATH = io.BytesIO()
torch.save({'epoch': epoch, 'model_state_dict': net.state_dict(),
            'optimizer_state_dict': optimizer.state_dict(), 'loss': loss}, PATH)

# --- load the general checkpoint and resume training ---
model = Net()
optimizer = optim.SGD(model.parameters(), lr=0.001, momentum=0.9)
PATH.seek(0)
checkpoint = torch.load(PATH)
model.load_state_dict(checkpoint['model_state_dict'])
optimizer.load_state_dict(checkpoint['optimizer_state_dict'])
epoch = checkpoint['epoch']
loss = checkpoint['loss']

model.train()
fc1_before = model.fc1.weight.detach().clone()
for epoch in range(epoch + 1, epoch + 6):
    optimizer.zero_grad()
    loss = criterion(model(inputs), labels)
    loss.backward()
    optimizer.step()
    print(f"epoch {epoch} loss {loss.item():.6f}")

print("model.fc1 has a gradient:", model.fc1.weight.grad is not None)
print("model.fc1 changed after resuming:", not torch.equal(fc1_before, model.fc1.weight))
