"""Unsupervised image segmentation by backpropagation (kanezaki/pytorch-unsupervised-segmentation#6): MyNet keeps its
middle conv and batch-norm layers in plain Python lists (`self.conv2 = []`, `self.bn2 = []`), so model.parameters()
never sees them: they get gradients in every iteration, but the SGD optimizer never updates them. The PR's fix puts
them in nn.ModuleList."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

nChannel, nConv, lr, maxIter = 16, 2, 0.1, 4


class MyNet(nn.Module):
    def __init__(self, input_dim):
        super(MyNet, self).__init__()
        self.conv1 = nn.Conv2d(input_dim, nChannel, kernel_size=3, stride=1, padding=1)
        self.bn1 = nn.BatchNorm2d(nChannel)
        self.conv2 = []  # <- non_parameter_tensor
        self.bn2 = []
        for i in range(nConv - 1):
            self.conv2.append(nn.Conv2d(nChannel, nChannel, kernel_size=3, stride=1, padding=1))
            self.bn2.append(nn.BatchNorm2d(nChannel))
        self.conv3 = nn.Conv2d(nChannel, nChannel, kernel_size=1, stride=1, padding=0)
        self.bn3 = nn.BatchNorm2d(nChannel)

    def forward(self, x):
        x = self.conv1(x)
        x = F.relu(x)
        x = self.bn1(x)
        for i in range(nConv - 1):
            x = self.conv2[i](x)
            x = F.relu(x)
            x = self.bn2[i](x)
        x = self.conv3(x)
        x = self.bn3(x)
        return x


torch.manual_seed(0)
np.random.seed(0)
im = np.random.rand(12, 12, 3).astype("float32")
data = torch.from_numpy(np.array([im.transpose((2, 0, 1))]))
labels = (np.arange(12 * 12) // 16)  # stands in for the SLIC superpixels
l_inds = [np.where(labels == u)[0] for u in np.unique(labels)]

model = MyNet(data.size(1))
model.train()
loss_fn = torch.nn.CrossEntropyLoss()
optimizer = optim.SGD(model.parameters(), lr=lr, momentum=0.9)
conv2_before = model.conv2[0].weight.detach().clone()
for batch_idx in range(maxIter):
    optimizer.zero_grad()
    output = model(data)[0]
    output = output.permute(1, 2, 0).contiguous().view(-1, nChannel)
    ignore, target = torch.max(output, 1)
    im_target = target.data.cpu().numpy()
    for inds in l_inds:  # superpixel refinement
        u_labels, hist = np.unique(im_target[inds], return_counts=True)
        im_target[inds] = u_labels[np.argmax(hist)]
    target = torch.from_numpy(im_target)
    loss = loss_fn(output, target)
    loss.backward()
    optimizer.step()
    print(batch_idx, "/", maxIter, ":", len(np.unique(im_target)), f"{loss.item():.4f}")
print(f"conv2[0] grad set: {model.conv2[0].weight.grad is not None}; "
      f"changed: {not torch.equal(conv2_before, model.conv2[0].weight)}")
