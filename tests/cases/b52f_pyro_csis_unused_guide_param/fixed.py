# "[bug] CSIS error when parameters are not fully used" -- pyro-ppl/pyro issue #2827,
# fixed by PR #2828 (merged)
# https://github.com/pyro-ppl/pyro/issues/2827
#
# What went wrong: CSIS.loss_and_grads collects every guide parameter seen in the
# param trace (pyro.module registers all parameters of the guide network) and calls
# torch.autograd.grad(particle_loss, guide_params, allow_unused=True).  A guide
# parameter that does not take part in this particle's loss gets a None gradient, and
# the accumulation `guide_param.grad + guide_grad` raises
#   TypeError: unsupported operand type(s) for +: 'Tensor' and 'NoneType'
# Fix (PR #2828): skip parameters whose gradient is None
#   (`if guide_grad is None: continue`) before accumulating.
#
# Plain-torch rewrite of pyro.infer.csis.CSIS (model/guide traces reduced to dicts);
# the guide network uses a different head depending on the sign of the observation,
# so each particle leaves one head out of its loss.
import torch
import torch.nn as nn
from torch.distributions import Normal

torch.manual_seed(0)


def torch_item(x):
    return x if isinstance(x, (int, float)) else x.item()


def model(observations={"y": None}):
    # x ~ Normal(0, 1); y ~ Normal(x, 0.5)
    x = Normal(0.0, 1.0).sample()
    y = observations["y"] if observations["y"] is not None else Normal(x, 0.5).sample()
    return {"x": x, "y": y}


class GuideNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.pos_head = nn.Linear(1, 2)
        self.neg_head = nn.Linear(1, 2)

    def forward(self, y):
        head = self.pos_head if y > 0 else self.neg_head
        loc, log_scale = head(y.view(1, 1)).squeeze(0)
        return loc, log_scale.exp()


guide_net = GuideNet()


def guide(observations={"y": None}):
    loc, scale = guide_net(observations["y"])
    return Normal(loc, scale)


class CSIS:
    def __init__(self, model, guide, optim, training_batch_size=10):
        self.model = model
        self.guide = guide
        self.optim = optim
        self.training_batch_size = training_batch_size

    def step(self, *args, **kwargs):
        loss = self.loss_and_grads(True, None, *args, **kwargs)
        self.optim.step()
        self.optim.zero_grad()
        return torch_item(loss)

    def loss_and_grads(self, grads, batch, *args, **kwargs):
        if batch is None:
            batch = (self._sample_from_joint(*args, **kwargs)
                     for _ in range(self.training_batch_size))
            batch_size = self.training_batch_size
        else:
            batch_size = len(batch)

        loss = 0
        for model_trace in batch:
            guide_trace, particle_params = self._get_matched_trace(model_trace, *args, **kwargs)
            particle_loss = self._differentiable_loss_particle(guide_trace)
            particle_loss /= batch_size

            if grads:
                guide_params = particle_params
                guide_grads = torch.autograd.grad(particle_loss, guide_params, allow_unused=True)
                for guide_grad, guide_param in zip(guide_grads, guide_params):
                    if guide_grad is None:
                        continue
                    guide_param.grad = guide_grad if guide_param.grad is None else guide_param.grad + guide_grad

            loss += torch_item(particle_loss)

        return loss

    def _differentiable_loss_particle(self, guide_trace):
        return -guide_trace["log_prob_sum"]

    def _get_matched_trace(self, model_trace, *args, **kwargs):
        # poutine.trace(param_only=True) around the guide: pyro.module("guide", guide_net)
        # registers every parameter of the network, used in this particle or not
        q = self.guide(observations={"y": model_trace["y"]})
        guide_trace = {"x": model_trace["x"], "log_prob_sum": q.log_prob(model_trace["x"]).sum()}
        particle_params = list(guide_net.parameters())
        return guide_trace, particle_params

    def _sample_from_joint(self, *args, **kwargs):
        return self.model(observations={"y": None})


optimiser = torch.optim.Adam(guide_net.parameters(), lr=1e-3)
csis = CSIS(model, guide, optimiser, training_batch_size=10)
for step in range(5):
    loss = csis.step()
    print(f"step {step}: loss={loss:.4f}")
