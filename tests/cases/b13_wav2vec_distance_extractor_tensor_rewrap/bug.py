"""wav2vec feature distance as a differentiable audio loss (facebookresearch/fairseq#2789): the user optimises the
frequency of a sine so that its wav2vec features match a 440 Hz tone, but `fp.grad` prints None. The helper
`extractor` wraps its input in `torch.tensor(x.view(1, -1))`, which copies the waveform into a new tensor without
history, so the distance never reaches `fp` (the fix passes `x.view(1, -1)` itself)."""
import torch
from torch import nn


class ConvFeatureExtractionModel(nn.Module):
    def __init__(self, layers=((32, 10, 5), (32, 8, 4), (32, 4, 2))):
        super().__init__()
        blocks, in_d = [], 1
        for dim, k, stride in layers:
            blocks.append(nn.Sequential(nn.Conv1d(in_d, dim, k, stride=stride, bias=False),
                                        nn.GroupNorm(1, dim), nn.ReLU()))
            in_d = dim
        self.conv_layers = nn.ModuleList(blocks)

    def forward(self, x):
        x = x.unsqueeze(1)
        for conv in self.conv_layers:
            x = conv(x)
        return x


torch.manual_seed(0)
model = ConvFeatureExtractionModel().eval()
time = torch.linspace(0.0, 0.25, 4000)


def sine(f0):
    return 0.5 * torch.cos(f0 * 2.0 * 3.14 * time)


def extractor(x):
    return model(torch.tensor(x.view(1, -1)))  # <- tensor_rewrap


ft = torch.tensor(440.0)
fp = torch.tensor(660.0, requires_grad=True)
dist = torch.mean(torch.abs(extractor(sine(ft)) - extractor(sine(fp))))
print(f"dist {dist.item():.4f}")
dist.backward()
print("fp.grad:", fp.grad)
