# Filter Response Normalization (FRN + TLU) layer, first version of pytorch-frn:
# beta / gamma / tau are passed in as tensors and stored as plain attributes.
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class FilterResponseNormalization(nn.Module):
    def __init__(self, beta, gamma, tau, eps=1e-6):
        """
        beta, gamma, tau: Variables of shape [1, C, 1, 1].
        eps: A scalar constant or learnable variable.
        """
        super(FilterResponseNormalization, self).__init__()
        self.beta = beta
        self.gamma = gamma  # <- non_parameter_tensor
        self.tau = tau
        self.eps = torch.Tensor([eps])

    def forward(self, x):
        n, c, h, w = x.shape
        assert (self.gamma.shape[1], self.beta.shape[1], self.tau.shape[1]) == (c, c, c)

        # Compute the mean norm of activations per channel
        nu2 = torch.mean(x.pow(2), (2, 3), keepdim=True)
        # Perform FRN
        x = x * torch.rsqrt(nu2 + torch.abs(self.eps))
        # Return after applying the Offset-ReLU non-linearity
        return torch.max(self.gamma * x + self.beta, self.tau)


class Net(nn.Module):
    def __init__(self, C=8, n_classes=4):
        super(Net, self).__init__()
        self.conv1 = nn.Conv2d(3, C, 3, padding=1)
        self.frn1 = FilterResponseNormalization(beta=torch.zeros(1, C, 1, 1),
                                                gamma=torch.ones(1, C, 1, 1),
                                                tau=torch.zeros(1, C, 1, 1))
        self.conv2 = nn.Conv2d(C, C, 3, padding=1)
        self.fc = nn.Linear(C, n_classes)

    def forward(self, x):
        x = self.frn1(self.conv1(x))
        x = F.relu(self.conv2(x))
        return self.fc(x.mean(dim=(2, 3)))


model = Net()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(5):
    x = torch.randn(4, 3, 8, 8)
    y = torch.randint(0, 4, (4,))
    optimizer.zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()

print("frn1.gamma.grad:", model.frn1.gamma.grad)
print("frn1.gamma after training:", model.frn1.gamma.flatten())
print("FRN parameters seen by the optimizer:", len(list(model.frn1.parameters())))
