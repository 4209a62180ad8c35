"""Korean study note "nn.ModuleList vs list" (chang-ai-study, Notion),
https://chang-ai-study.notion.site/nn-ModuleList-vs-list-eebcbafc98014668a92778ba31ec1928
The author builds a WAB block (an ASPP-like set of dilated convolutions, one ASPPConv per atrous rate) and
keeps the convolutions in a plain Python list: `self.convlist = modules`. forward loops over the list, so
the convolutions run and even get .grad, but named_parameters() does not list them ("convlist에 대한
내용은 보이지 않는다"), so an optimizer built from model.parameters() never updates them. The note's fix:
wrap the list in nn.ModuleList."""
from typing import List

import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(1)


class ASPPConv(nn.Sequential):
    def __init__(self, in_channels, out_channels, dilation, kernel_size, act):
        super().__init__(
            nn.Conv2d(in_channels, out_channels, kernel_size, padding=dilation, dilation=dilation, bias=False),
            nn.BatchNorm2d(out_channels),
            act,
        )


class WAB(nn.Module):
    def __init__(self, in_channels, out_channels, atrous_rates: List[int]):
        super(WAB, self).__init__()
        modules = []
        for rate in atrous_rates:
            modules += [ASPPConv(in_channels, in_channels // 2, rate, 3, nn.ReLU())]
        self.convlist = nn.ModuleList(modules)
        self.project = nn.Sequential(
            nn.Conv2d(len(self.convlist) * (in_channels // 2), out_channels, 1, bias=False),
            nn.BatchNorm2d(out_channels),
            nn.ReLU(),
        )

    def forward(self, x):
        conv_results = []
        for conv in self.convlist:
            conv_results += [conv(x)]
        output = torch.cat(conv_results, dim=1)
        output = self.project(output)
        return output


Network = WAB(8, 8, [1, 2, 3, 4])
for name, param in Network.named_parameters():
    print(f"param name: {name} , shape: {tuple(param.shape)}")

optimizer = torch.optim.Adam(Network.parameters(), lr=1e-2)
x = torch.randn(4, 8, 16, 16)
target = torch.randn(4, 8, 16, 16)
w0 = Network.convlist[0][0].weight.detach().clone()

for step in range(5):
    optimizer.zero_grad()
    loss = nn.functional.mse_loss(Network(x), target)
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.4f}")

registered = any(p is Network.convlist[0][0].weight for p in Network.parameters())
print("convlist[0] weight in Network.parameters():", registered)
print("convlist[0] weight changed:", not torch.equal(w0, Network.convlist[0][0].weight))
