"""Fixed twin of bug.py (sharif-apu/BJDD_CVPR21#11): the colour difference is computed in torch on the generated
tensor, so the colour term trains the generator."""
import torch
import torch.nn as nn


class deltaEColorLoss(nn.Module):
    def __init__(self, normalize=None):
        super().__init__()
        self.normalize = normalize

    def __call__(self, genImage, gtImage):
        losses = []
        for pair in range(len(genImage)):
            imageGT = gtImage[pair].permute(1, 2, 0)
            imageGen = genImage[pair].permute(1, 2, 0)
            deltaE = torch.sqrt(((imageGT - imageGen) ** 2).sum(-1) + 1e-12).abs()
            if self.normalize:
                deltaE = deltaE / 255.0
            losses.append(deltaE.mean())
        return torch.stack(losses).mean()


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
    grad_from_color = torch.autograd.grad(colorLoss(generator(inputImages), gtImages), generator[0].weight)[0]
    print(f"step {step}: color loss {colorLossEG.item():.4f}, its gradient norm on the generator: "
          f"{grad_from_color.norm().item():.2e}")
