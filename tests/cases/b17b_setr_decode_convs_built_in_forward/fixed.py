"""setr-pytorch issue #4, "model building problem".
https://github.com/gupta-abhay/setr-pytorch/issues/4

What the user saw: in SETR_Naive/SETR_PUP/SETR_MLA the `decode` function, called from `forward`,
builds its layers (nn.Conv2d, nn.BatchNorm2d) on every call, "so these layers will be initialized every
time the model is fed data. Therefore, these layers' weights are not trained at all."
Why: a module constructed inside forward has fresh random weights each call; it is not a registered
submodule, so the optimizer built from model.parameters() never holds it.
Fix (applied by the maintainer): create the decoder layers once in __init__ and only call them in decode.
"""
import torch
import torch.nn as nn

torch.manual_seed(0)


class SETR_Naive(nn.Module):
    def __init__(self, img_dim=8, patch_dim=2, num_channels=3, embedding_dim=16, num_classes=4):
        super().__init__()
        self.patch_dim, self.embedding_dim, self.num_classes = patch_dim, embedding_dim, num_classes
        self.grid = img_dim // patch_dim
        self.linear_encoding = nn.Linear(num_channels * patch_dim * patch_dim, embedding_dim)
        self.conv1 = nn.Conv2d(embedding_dim, embedding_dim, kernel_size=1)
        self.bn1 = nn.BatchNorm2d(embedding_dim)
        self.conv2 = nn.Conv2d(embedding_dim, num_classes, kernel_size=1)
        self.upsample = nn.Upsample(scale_factor=patch_dim, mode='bilinear')

    def encode(self, x):
        n, c, h, w = x.shape
        p = self.patch_dim
        x = x.unfold(2, p, p).unfold(3, p, p).permute(0, 2, 3, 1, 4, 5).reshape(n, -1, c * p * p)
        return self.linear_encoding(x)

    def decode(self, x):
        x = x.transpose(1, 2).reshape(x.size(0), self.embedding_dim, self.grid, self.grid)
        x = torch.relu(self.bn1(self.conv1(x)))
        return self.upsample(self.conv2(x))

    def forward(self, x):
        return self.decode(self.encode(x))


model = SETR_Naive()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(2, 3, 8, 8), torch.randint(0, 4, (2, 8, 8))
for step in range(3):
    opt.zero_grad()
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
print("trainable tensors in model:", [n for n, _ in model.named_parameters()])
model.eval()
print("two forwards on the same input agree:", torch.allclose(model(x), model(x)))
