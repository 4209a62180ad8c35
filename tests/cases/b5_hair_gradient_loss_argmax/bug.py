"""Mobile hair segmentation's image-gradient loss (wonbeomjang/mobile-hair-segmentation-pytorch#3): the
mask is taken as `pred.argmax(1)`, so the edge-alignment term is a constant and only cross-entropy trains."""
import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.modules.loss import _WeightedLoss


class ImageGradientLoss(_WeightedLoss):
    def __init__(self, size_average=None, reduce=None, reduction='mean'):
        super(ImageGradientLoss, self).__init__(size_average, reduce, reduction)
        self.device = torch.device("cpu")

    def forward(self, pred, gray_image):
        size = pred.size()
        pred = pred.argmax(1).view(size[0], 1, size[2], size[3]).float()  # <- cut_term
        gradient_tensor_x = torch.Tensor([[1.0, 0.0, -1.0],
                                          [2.0, 0.0, -2.0],
                                          [1.0, 0.0, -1.0]]).to(self.device).view((1, 1, 3, 3))
        gradient_tensor_y = torch.Tensor([[1.0, 2.0, 1.0],
                                          [0.0, 0.0, 0.0],
                                          [-1.0, -2.0, -1.0]]).to(self.device).view((1, 1, 3, 3))
        I_x = F.conv2d(gray_image, gradient_tensor_x)
        G_x = F.conv2d(pred, gradient_tensor_x)
        I_y = F.conv2d(gray_image, gradient_tensor_y)
        G_y = F.conv2d(pred, gradient_tensor_y)
        G = torch.sqrt(torch.pow(G_x, 2) + torch.pow(G_y, 2) + 1e-6)
        gradient = 1 - torch.pow(I_x * G_x + I_y * G_y, 2)
        gradient = torch.where(gradient > 0, gradient, torch.tensor(0.).to(self.device))
        image_gradient_loss = torch.sum(torch.mul(G, gradient)) / (torch.sum(G) + 1e-6)
        return image_gradient_loss


class HairMatteNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 8, 3, padding=1), nn.ReLU())
        self.head = nn.Conv2d(8, 2, 1)

    def forward(self, x):
        return self.head(self.encoder(x))


torch.manual_seed(0)
net = HairMatteNet()
optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)
criterion, image_gradient_criterion = nn.CrossEntropyLoss(), ImageGradientLoss()
image = torch.rand(2, 3, 12, 12)
mask = (image.mean(1) > 0.5).long()
gray_image = image.mean(1, keepdim=True)
for epoch in range(3):
    pred = net(image)
    cross_entropy_loss = criterion(pred, mask)
    image_loss = image_gradient_criterion(pred, gray_image)
    loss = cross_entropy_loss + 0.5 * image_loss
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"epoch {epoch}: loss {loss.item():.4f} (ce {cross_entropy_loss.item():.4f}, image gradient {image_loss.item():.4f})")
