import torch
import torch.nn.functional as F


class EdgeLoss(torch.nn.Module):
    def forward(self, img):
        kx = torch.tensor([[[[-1.0, 0.0, 1.0]]]])
        grad_x = F.conv2d(img, kx, padding=(0, 1))
        grad_y = F.conv2d(img, kx.transpose(2, 3), padding=(1, 0))
        self.grad_mag = torch.sqrt(grad_x ** 2 + grad_y ** 2)  # <- nan
        return self.grad_mag.mean()


img = torch.ones(1, 1, 8, 8)
img[..., 4:, :] = 2.0
img.requires_grad_(True)
loss = EdgeLoss()(img)
loss.backward()
print(img.grad.isnan().any())
