"""JeremyCJM/CCST issue #10 "feddg (ELCFS) meta learning implementation is wrong",
https://github.com/JeremyCJM/CCST/issues/10 (code: federated/fed_run.py, train_meta): the FedDG/ELCFS
baseline of this federated domain-generalization repo does one inner (fast-adapt) step on the raw image,
builds fast_weights = param - step * clamp(grad), copies them into `learner = copy.deepcopy(model)` with
`learner.load_state_dict(fast_weights, strict=False)`, and adds the outer loss of `learner` on the
amplitude-swapped image to the inner loss. load_state_dict copies the values into learner's own leaf
Parameters, so loss_outer has no path back to the client model: its meta term never reaches the
parameters the optimizer steps (they are trained by loss_inner alone); its gradient lands on the throwaway
learner. Fix (as the reporter says, and as the original FedDG code does): evaluate the model at the fast
weights functionally, here torch.func.functional_call(model, fast_weights, image_freq), with
create_graph=True on the inner grad so the meta-gradient is the full one. Loader, network and the
federated round are a few lines of stand-in; train_meta keeps the repo's structure."""
import copy
import functools
import math
from collections import OrderedDict

import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(1)


class Args:
    meta_step_size = 0.05
    clip_value = 1.0


# --- nets.models stand-in: a small CNN classifier ---------------------------------------------------
class SmallNet(nn.Module):
    def __init__(self, n_classes=4):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1))
        self.fc = nn.Linear(8, n_classes)

    def forward(self, x):
        return self.fc(self.features(x).flatten(1))


def train_meta(model, train_loader, optimizer, loss_fun, device, args):
    model.to(device)
    model.train()
    loss_all = 0
    outer_reaches_model = []

    for it, data in enumerate(train_loader):
        img, image_freq, class_l = data
        img, image_freq, class_l = img.to(device), image_freq.to(device), class_l.to(device)
        model.zero_grad()

        # Fast Adapt
        output_inner = model(img)
        loss_inner = loss_fun(output_inner, class_l)
        grads = torch.autograd.grad(loss_inner, model.parameters(), retain_graph=True)
        meta_step_size = args.meta_step_size
        clip_value = args.clip_value
        fast_weights = OrderedDict((name, param - torch.mul(meta_step_size, torch.clamp(grad, 0-clip_value, clip_value))) for
                                                ((name, param), grad) in
                                                zip(model.named_parameters(), grads))
        learner = copy.deepcopy(model)
        learner.load_state_dict(fast_weights, strict=False)  # <- state_dict_reload

        output_outer = learner(image_freq)
        del fast_weights
        loss_outer = loss_fun(output_outer, class_l)

        loss = loss_inner + loss_outer
        outer_reaches_model.append(any(
            g is not None for g in torch.autograd.grad(loss_outer, list(model.parameters()),
                                                       retain_graph=True, allow_unused=True)))

        loss_all += loss.item()
        loss.backward()
        optimizer.step()

    return loss_all / (it + 1), outer_reaches_model


# --- the federated round (FedAvg over clients), in short ---------------------------------------------
loader = [(torch.randn(8, 3, 12, 12), torch.randn(8, 3, 12, 12), torch.randint(0, 4, (8,))) for _ in range(3)]
server_model = SmallNet()
models = [copy.deepcopy(server_model) for _ in range(2)]
optimizers = [torch.optim.SGD(m.parameters(), lr=0.1) for m in models]
for client_idx, model in enumerate(models):
    _, reached = train_meta(model, loader, optimizers[client_idx], nn.CrossEntropyLoss(), "cpu", Args())
with torch.no_grad():
    for key in server_model.state_dict().keys():
        server_model.state_dict()[key].data.copy_(sum(m.state_dict()[key] for m in models) / len(models))

print("meta (outer) loss reached the client model's parameters:", any(reached))
