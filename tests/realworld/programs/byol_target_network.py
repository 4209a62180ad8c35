"""BYOL: online network (encoder + projector + predictor) regresses the projections of a momentum target
network; the target is a frozen deep copy updated by exponential moving average.

Source: https://github.com/lucidrains/byol-pytorch (byol_pytorch/byol_pytorch.py, README training loop).

Patterns kept (all right):
- `NetWrapper` grabs the representation with a forward hook on a hidden layer and builds its projector
  lazily on the first call; `BYOL.__init__` runs one dummy forward so the projector (and the target copy)
  exist before `torch.optim.Adam(learner.parameters())` is created.
- The target encoder is `copy.deepcopy(online_encoder)` with `requires_grad = False` on every parameter.
  Being assigned to `self.target_encoder` it is a registered submodule, so `learner.parameters()` hands
  its frozen parameters to Adam too (as in the README): they never get a `.grad`, so Adam skips them and
  only the EMA moves them.
- The target projections are computed under `torch.no_grad()` and `.detach()`-ed again (stop-gradient is
  the method): only the online branch learns.
- `update_moving_average` writes `ma_params.data = beta * old + (1 - beta) * new`: the EMA update of the
  target lives outside autograd on purpose, and the target is in no optimizer.
- The predictor exists only on the online side; the symmetric loss uses view one's prediction against view
  two's target projection and vice versa.
- The backbone's classifier head was replaced by `nn.Identity()` (as in the README's usage with the
  `avgpool` hidden layer), so no backbone parameter is left out of the loss.
"""
import copy
import os

import torch
import torch.nn as nn
import torch.nn.functional as F


def loss_fn(x, y):
    x = F.normalize(x, dim=-1, p=2)
    y = F.normalize(y, dim=-1, p=2)
    return 2 - 2 * (x * y).sum(dim=-1)


def set_requires_grad(model, val):
    for p in model.parameters():
        p.requires_grad = val


class EMA:
    def __init__(self, beta):
        self.beta = beta

    def update_average(self, old, new):
        if old is None:
            return new
        return old * self.beta + (1 - self.beta) * new


def update_moving_average(ema_updater, ma_model, current_model):
    for current_params, ma_params in zip(current_model.parameters(), ma_model.parameters()):
        old_weight, up_weight = ma_params.data, current_params.data
        ma_params.data = ema_updater.update_average(old_weight, up_weight)


def MLP(dim, projection_size, hidden_size=32):
    return nn.Sequential(nn.Linear(dim, hidden_size), nn.BatchNorm1d(hidden_size), nn.ReLU(inplace=True),
                         nn.Linear(hidden_size, projection_size))


class NetWrapper(nn.Module):
    def __init__(self, net, projection_size, projection_hidden_size, layer=-2):
        super().__init__()
        self.net = net
        self.layer = layer
        self.projector = None
        self.projection_size = projection_size
        self.projection_hidden_size = projection_hidden_size
        self.hidden = {}
        self.hook_registered = False

    def _find_layer(self):
        children = [*self.net.children()]
        return children[self.layer]

    def _hook(self, _, input, output):
        self.hidden[input[0].device] = output.flatten(1)

    def _register_hook(self):
        self._find_layer().register_forward_hook(self._hook)
        self.hook_registered = True

    def _get_projector(self, hidden):
        if self.projector is None:
            _, dim = hidden.shape
            self.projector = MLP(dim, self.projection_size, self.projection_hidden_size)
        return self.projector

    def get_representation(self, x):
        if not self.hook_registered:
            self._register_hook()
        self.hidden.clear()
        _ = self.net(x)
        hidden = self.hidden[x.device]
        self.hidden.clear()
        return hidden

    def forward(self, x):
        representation = self.get_representation(x)
        projector = self._get_projector(representation)
        return projector(representation), representation


class BYOL(nn.Module):
    def __init__(self, net, image_size, hidden_layer=-2, projection_size=16, projection_hidden_size=32,
                 moving_average_decay=0.99):
        super().__init__()
        self.augment1 = self.augment2 = self.augment
        self.online_encoder = NetWrapper(net, projection_size, projection_hidden_size, layer=hidden_layer)
        self.target_encoder = None
        self.target_ema_updater = EMA(moving_average_decay)
        self.online_predictor = MLP(projection_size, projection_size, projection_hidden_size)
        self.forward(torch.randn(2, 3, image_size, image_size))  # instantiates projector and target

    @staticmethod
    def augment(x):
        flip = torch.rand(x.size(0)) < 0.5
        x = torch.where(flip[:, None, None, None], x.flip(3), x)
        return x * (0.8 + 0.4 * torch.rand(x.size(0), 1, 1, 1)) + 0.1 * torch.randn_like(x)

    def _get_target_encoder(self):
        if self.target_encoder is None:
            target_encoder = copy.deepcopy(self.online_encoder)
            set_requires_grad(target_encoder, False)
            self.target_encoder = target_encoder
        return self.target_encoder

    def update_moving_average(self):
        assert self.target_encoder is not None, "target encoder has not been created yet"
        update_moving_average(self.target_ema_updater, self.target_encoder, self.online_encoder)

    def forward(self, x):
        image_one, image_two = self.augment1(x), self.augment2(x)
        images = torch.cat((image_one, image_two), dim=0)
        online_projections, _ = self.online_encoder(images)
        online_predictions = self.online_predictor(online_projections)
        online_pred_one, online_pred_two = online_predictions.chunk(2, dim=0)
        with torch.no_grad():
            target_encoder = self._get_target_encoder()
            target_projections, _ = target_encoder(images)
            target_projections = target_projections.detach()
            target_proj_one, target_proj_two = target_projections.chunk(2, dim=0)
        loss_one = loss_fn(online_pred_one, target_proj_two.detach())
        loss_two = loss_fn(online_pred_two, target_proj_one.detach())
        loss = loss_one + loss_two
        return loss.mean()


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    resnet = nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
        nn.Conv2d(8, 16, 3, stride=2, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),  # the "avgpool" hidden layer
        nn.Identity(),            # resnet.fc replaced by Identity
    )
    learner = BYOL(resnet, image_size=8, hidden_layer=-2)
    opt = torch.optim.Adam(learner.parameters(), lr=3e-3)
    images = torch.randn(16, 3, 8, 8)
    for step in range(6):
        loss = learner(images)
        opt.zero_grad()
        loss.backward()
        opt.step()
        learner.update_moving_average()
        print(f"step {step} loss {loss.item():.4f}")
    if os.environ.get("REALWORLD_STATE"):
        torch.save({"online_encoder": learner.online_encoder.state_dict(),
                    "online_predictor": learner.online_predictor.state_dict(),
                    "target_encoder": learner.target_encoder.state_dict()}, os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
