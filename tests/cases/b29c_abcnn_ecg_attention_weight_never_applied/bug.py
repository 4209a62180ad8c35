"""ziyu-zui/heart-arrhythmia-diagnosis-with-deep-learning#4 "Could you please inform me of the purpose of the
"self.weight" in your code?", https://github.com/ziyu-zui/heart-arrhythmia-diagnosis-with-deep-learning/issues/4:
in ABCNN_ECG.py the attention-based CNN on two-lead ECG segments defines `self.weight = Parameter(torch.Tensor(2,
32))`, but forward() goes straight to self.conv1(x): the weight is registered and handed to Adam, yet it never
takes part in the loss, so it gets no gradient and never learns. The author: "The self.weight is the tensor vector
for attention weights, which will learn the importance of each timestamp. It should be element-wise multiplied
with the input data. I messed up the code versions, and have corrected it now." The MIT-BIH data are replaced by
random two-lead segments of 32 samples (so the (2, 32) weight matches the input); the weight is created with
torch.ones instead of uninitialised torch.Tensor memory so that the run is deterministic; sizes are shrunk."""
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.data as Data
from torch.nn.parameter import Parameter

torch.manual_seed(0)
LR = 0.001


class CNN(nn.Module):
    def __init__(self,):
        super(CNN, self).__init__()
        self.conv1 = nn.Sequential(
            nn.Conv2d(in_channels=1, out_channels=4, kernel_size=[2, 2], stride=1, padding=[1, 2]),
            nn.ReLU(),
            nn.MaxPool2d(kernel_size=[1, 2])
        )
        self.conv2 = nn.Sequential(
            nn.Conv2d(4, 8, [2, 2], 1, padding=[1, 2]),
            nn.ReLU(),
            nn.MaxPool2d([1, 2])
        )
        self.fc = nn.Linear(320, 64)
        self.out = nn.Linear(64, 5)
        self.weight = Parameter(torch.ones(2, 32))

    def forward(self, x):
        x = self.conv1(x)  # <- unused_parameter
        x = self.conv2(x)
        x = x.view(x.size(0), -1)
        x = F.relu(self.fc(x))
        x = F.dropout(x, 0.2)
        output = self.out(x)
        return output, x


train_x_3d = torch.unsqueeze(torch.randn(64, 2, 32), dim=1)  # (segments, 1, leads, samples)
train_y_ = torch.randint(0, 5, (64, 1))
train_loader = Data.DataLoader(dataset=Data.TensorDataset(train_x_3d, train_y_), batch_size=16, shuffle=False)

cnn = CNN()
optimizer = torch.optim.Adam(cnn.parameters(), lr=LR)
loss_func = nn.CrossEntropyLoss()
weight_before = cnn.weight.detach().clone()
for epoch in range(2):
    for step, (train_x, train_y) in enumerate(train_loader):
        output = cnn(train_x)[0]
        loss = loss_func(output, train_y.squeeze(1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

print("attention weight grad is None:", cnn.weight.grad is None)
print("attention weight changed:", not torch.equal(weight_before, cnn.weight))
print("conv1 weight grad is None:", cnn.conv1[0].weight.grad is None)
