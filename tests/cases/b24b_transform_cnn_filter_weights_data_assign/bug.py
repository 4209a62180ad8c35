"""PyTorch forum thread "Learning to transform CNN filter weights",
https://discuss.pytorch.org/t/learning-to-transform-cnn-filter-weights/127906: a small TransformationNet is
meant to learn how to transform the filters of a fixed, pre-trained CNN (e.g. rotate them by an angle given as a
parameter). Each step the user writes the transformed filters into the CNN with
`model_cnn.conv.weight.data = model_transformation(...)` and then runs `model_cnn(image)`.
Assigning to `.data` stores the values only: the conv weight stays a leaf without history, so the loss has no path
back to TransformationNet. The user saw no gradients for the transformation model ("I guess when assigning the
parameter weights, the graph is broken"): model_transformation.linear.weight.grad stays None and the optimizer never
changes it (the gradient goes to model_cnn.conv.weight instead, which nobody optimizes).
Fix: use the generated filters directly in the convolution (functional F.conv2d with the computed weight) instead
of writing them into the Parameter's .data; the pre-trained CNN is frozen, as the thread says it is meant to be.
The thread only shows the training step up to the assignment; the loss against a random target is a stand-in."""
import copy  # noqa: F401  (imported in the thread)

import torch
import torch.nn as nn
import torch.nn.functional as F


# define models
class CNN(nn.Module):
    def __init__(self):
        super(CNN, self).__init__()
        self.conv = nn.Conv2d(1, 1, 3)

    def forward(self, x):
        return self.conv(x)


class TransformationNet(nn.Module):
    def __init__(self):
        super(TransformationNet, self).__init__()
        self.linear = nn.Linear(10, 9, bias=False)

    def forward(self, x, param):
        x = torch.cat([x, param], dim=1)
        return self.linear(x)


torch.manual_seed(0)
torch.set_num_threads(1)
model_cnn = CNN()
# Since we are changing the CNN filter weights while training, the copy is used to keep the original pre-trained model.
model_cnn_copy = CNN()

model_transformation = TransformationNet()
model_transformation.train()

# only optimize the model for transforming the filters
optimizer_model_transformation = torch.optim.SGD(model_transformation.parameters(), lr=0.1, momentum=0.9)
criterion = nn.MSELoss()
w_before = model_transformation.linear.weight.detach().clone()

# training loop
for i in range(3):
    B = 1  # batch size
    image = torch.randn((B, 1, 5, 5))  # some input
    target = torch.randn((B, 1, 3, 3))

    # update the CNN using the model for transforming the filters.
    model_cnn.conv.weight.data = model_transformation(model_cnn_copy.conv.weight.data.view(B, -1), torch.tensor([[1.0]])).view((B, 1, 3, 3))  # <- data_attr
    output = model_cnn(image)
    loss = criterion(output, target)

    optimizer_model_transformation.zero_grad()
    loss.backward()
    optimizer_model_transformation.step()

print("transformation weight grad is None:", model_transformation.linear.weight.grad is None)
print("transformation weight changed:", not torch.equal(w_before, model_transformation.linear.weight))
