"""The fixed twin: with hidden_layer=-1 the representation is the network's output and no hook is registered, so
nothing with history is stored on the wrapper and the target encoder can be deep-copied."""
import copy

import torch
import torch.nn.functional as F
from torch import nn


def MLP(dim, projection_size, hidden_size=16):
    return nn.Sequential(nn.Linear(dim, hidden_size), nn.ReLU(), nn.Linear(hidden_size, projection_size))


class NetWrapper(nn.Module):
    def __init__(self, net, representation_size, projection_size, layer=-2):
        super().__init__()
        self.net, self.layer = net, layer
        self.projector = MLP(representation_size, projection_size)
        self.hidden = None
        self.hook_registered = False

    def _find_layer(self):
        return [*self.net.children()][self.layer]

    def _hook(self, _, __, output):
        self.hidden = output.flatten(1)

    def _register_hook(self):
        self._find_layer().register_forward_hook(self._hook)
        self.hook_registered = True

    def get_representation(self, x):
        if self.layer == -1:
            return self.net(x)
        if not self.hook_registered:
            self._register_hook()
        self.net(x)
        hidden, self.hidden = self.hidden, None
        return hidden

    def forward(self, x):
        return self.projector(self.get_representation(x))


class BYOL(nn.Module):
    def __init__(self, net, representation_size, hidden_layer=-2, projection_size=8):
        super().__init__()
        self.online_encoder = NetWrapper(net, representation_size, projection_size, layer=hidden_layer)
        self.target_encoder = None
        self.online_predictor = MLP(projection_size, projection_size)

    def _get_target_encoder(self):
        if self.target_encoder is None:
            self.target_encoder = copy.deepcopy(self.online_encoder)
            self.target_encoder.requires_grad_(False)
        return self.target_encoder

    def forward(self, x):
        image_one, image_two = x + 0.1 * torch.randn_like(x), x + 0.1 * torch.randn_like(x)
        online_pred_one = self.online_predictor(self.online_encoder(image_one))
        online_pred_two = self.online_predictor(self.online_encoder(image_two))
        with torch.no_grad():
            target_encoder = self._get_target_encoder()
            target_proj_one, target_proj_two = target_encoder(image_one), target_encoder(image_two)
        loss_one = 2 - 2 * F.cosine_similarity(online_pred_one, target_proj_two.detach(), dim=-1)
        loss_two = 2 - 2 * F.cosine_similarity(online_pred_two, target_proj_one.detach(), dim=-1)
        return (loss_one + loss_two).mean()


torch.manual_seed(0)
resnet = nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 10))
learner = BYOL(resnet, representation_size=10, hidden_layer=-1)
opt = torch.optim.Adam([p for n, p in learner.named_parameters() if not n.startswith("target_encoder")], lr=3e-4)
images = torch.randn(8, 12)
for step in range(3):
    loss = learner(images)
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"step {step}: loss {loss.item():.4f}")
