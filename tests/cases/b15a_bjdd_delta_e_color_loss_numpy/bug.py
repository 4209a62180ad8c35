"""BJDD_CVPR21 (sharif-apu/BJDD_CVPR21#11, https://github.com/sharif-apu/BJDD_CVPR21/issues/11): the generator's
deltaEColorLoss turns each image into NumPy with `image.cpu().detach().numpy()` in its helper torchTensorToNumpy,
computes the colour difference there, and rebuilds the loss with `torch.tensor(self.loss, requires_grad=True)`.
"after these operations, the grads cannot backpropagate to the network", so the colour term is added to the
generator loss but never moves a weight (only the L1 term trains). Fix: compute the colour difference in torch on
the generated tensor itself."""
import numpy as np
import torch
import torch.nn as nn


class deltaEColorLoss(nn.Module):
    def __init__(self, normalize=None):
        super().__init__()
        self.loss = []
        self.normalize = normalize

    def torchTensorToNumpy(self, image):
        imageNP = image.cpu().detach().numpy().reshape(image.shape[1], image.shape[2], image.shape[0])  # <- cut_term
        return imageNP

    def __call__(self, genImage, gtImage):
        self.loss.clear()
        for pair in range(len(genImage)):
            imageGTNP = self.torchTensorToNumpy(gtImage[pair])
            imageGenNP = self.torchTensorToNumpy(genImage[pair])
            deltaE = np.absolute(np.sqrt(((imageGTNP - imageGenNP) ** 2).sum(-1)))  # stands in for deltaE_ciede2000
            if self.normalize:
                deltaE /= 255.0
            self.loss.append(np.mean(deltaE))
        deltaELoss = torch.mean(torch.tensor(self.loss, requires_grad=True))
        return deltaELoss


torch.manual_seed(0)
generator = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 3, 3, padding=1))
optimizerEG = torch.optim.Adam(generator.parameters(), lr=1e-3)
reconstructionLoss = nn.L1Loss()
colorLoss = deltaEColorLoss(normalize=True)
inputImages, gtImages = torch.rand(4, 3, 8, 8), torch.rand(4, 3, 8, 8)
for step in range(3):
    rawInput = generator(inputImages)
    colorLossEG = colorLoss(rawInput, gtImages)
    generatorContentLoss = reconstructionLoss(rawInput, gtImages) + colorLossEG
    optimizerEG.zero_grad()
    generatorContentLoss.backward()
    optimizerEG.step()
    grad_from_color = torch.autograd.grad(colorLoss(generator(inputImages), gtImages), generator[0].weight,
                                          allow_unused=True)[0]
    print(f"step {step}: color loss {colorLossEG.item():.4f}, its gradient on the generator: {grad_from_color}")
