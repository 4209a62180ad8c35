"""PyTorch forums, "Use of torch.utils.checkpoint.checkpoint causes simple model to diverge",
https://discuss.pytorch.org/t/use-of-torch-utils-checkpoint-checkpoint-causes-simple-model-to-diverge/116271:
a CIFAR10 CNN that converges to ~0.72 loss without checkpointing stops learning properly once every block is
wrapped in torch.utils.checkpoint.checkpoint to save memory.
Why: the (reentrant, default) checkpoint runs the wrapped block under no_grad and only attaches a graph to its
output if one of its *inputs* requires grad. The first block's input is the image batch, which does not, so the
output of checkpoint(self.cnn_block_1, X) carries no graph back into cnn_block_1: its convolutions get grad None
and keep their random initial weights (PyTorch only warns "None of the inputs have requires_grad=True. Gradients
will be None"). Block 2's checkpoint then gets that graph-less output as input, so it is cut the same way; only
the dense head learns.
Fix (the thread's): do not checkpoint the first block (call self.cnn_block_1(X) directly); then block 2's input
requires grad and its checkpoint works. CIFAR10 is replaced by a few seeded random 3x32x32 batches; sizes are
shrunk to keep it fast."""
import torch
import torch.nn as nn
import torch.utils.checkpoint

torch.manual_seed(0)
torch.set_num_threads(1)


class CIFAR10Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.cnn_block_1 = nn.Sequential(*[
            nn.Conv2d(3, 8, 3, padding=1),
            nn.ReLU(),
            nn.Conv2d(8, 16, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(kernel_size=2)
        ])
        self.dropout_1 = nn.Dropout(0.25)
        self.cnn_block_2 = nn.Sequential(*[
            nn.Conv2d(16, 16, 3, padding=1),
            nn.ReLU(),
            nn.Conv2d(16, 16, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(kernel_size=2)
        ])
        self.dropout_2 = nn.Dropout(0.25)
        self.flatten = lambda inp: torch.flatten(inp, 1)
        self.linearize = nn.Sequential(*[
            nn.Linear(16 * 8 * 8, 64),
            nn.ReLU()
        ])
        self.dropout_3 = nn.Dropout(0.5)
        self.out = nn.Linear(64, 10)

    def forward(self, X):
        X = self.cnn_block_1(X)
        X = self.dropout_1(X)
        X = torch.utils.checkpoint.checkpoint(self.cnn_block_2, X)
        X = self.dropout_2(X)
        X = self.flatten(X)
        X = self.linearize(X)
        X = self.dropout_3(X)
        X = self.out(X)
        return X


model = CIFAR10Model()
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
batches = [(torch.randn(8, 3, 32, 32), torch.randint(0, 10, (8,))) for _ in range(3)]
first_conv_before = model.cnn_block_1[0].weight.detach().clone()

model.train()
for X_batch, y_batch in batches:
    optimizer.zero_grad()
    output = model(X_batch)
    loss = criterion(output, y_batch)
    loss.backward()
    optimizer.step()

print("cnn_block_1 conv grad is None:", model.cnn_block_1[0].weight.grad is None)
print("cnn_block_2 conv grad is None:", model.cnn_block_2[0].weight.grad is None)
print("cnn_block_1 conv changed:", not torch.equal(first_conv_before, model.cnn_block_1[0].weight))
